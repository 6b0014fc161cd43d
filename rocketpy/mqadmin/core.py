"""``rocketpy admin SUBCOMMAND``: mqadmin's commands, names, options and output layout (``--json`` for scripts).

This module holds what every subcommand shares (the ``command`` registry, the ``Out`` printer, the runner
and common options and helpers); the subcommands live in the package's topic modules (topics, brokers,
groups, offsets, messages, config, acl, metrics), imported at the end.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from ..client.admin import Admin
from ..client.config import default_namesrv
from ..client.errors import BadArgument
from ..client.java_text import java_name, mq_str
from ..clock import now_ms
from ..codecs.bodies import MessageQueue, TopicConfig

Command = Callable[[Admin, argparse.Namespace, "Out"], Awaitable[int | None]]
COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Command]] = {}


class Out:
    """mqadmin's plain-text layout (printf columns, no markup, no box characters), or with ``--json``
    nothing but the command's result as one JSON document at the end."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self.data: Any = None

    def line(self, text: str = "") -> None:
        if not self.as_json:
            sys.stdout.write(text + "\n")

    def raw(self, text: str) -> None:
        """Text without a final newline, where mqadmin prints none."""
        if not self.as_json:
            sys.stdout.write(text)

    def result(self, data: Any) -> None:
        self.data = data


def command(name: str, help_text: str, options: Callable[[argparse.ArgumentParser], None]) -> Callable[[Command],
                                                                                                      Command]:
    def deco(fn: Command) -> Command:
        COMMANDS[name] = (help_text, options, fn)
        return fn

    return deco


def front_string(text: str | None, size: int) -> str:
    """UtilAll.frontStringAtLeast: at most ``size`` characters."""
    text = "null" if text is None else text
    return text[:size]


def broker_or_cluster_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-b", "--brokerAddr", dest="broker_addr", help="broker address host:port")
    p.add_argument("-c", "--clusterName", dest="cluster", help="every master of this cluster")


def need_target(args: argparse.Namespace) -> None:
    if not args.broker_addr and not args.cluster:
        raise BadArgument("give -b brokerAddr or -c clusterName")


def time_str(ms: int) -> str:
    """UtilAll.YYYY_MM_DD_HH_MM_SS (consumerProgress #LastTime), N/A when unknown."""
    if ms <= 0:
        return "N/A"
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def time_ms_str(ms: int) -> str:
    """UtilAll.timeMillisToHumanString2: yyyy-MM-dd HH:mm:ss,SSS."""
    dt = datetime.fromtimestamp(ms / 1000)
    return dt.strftime("%Y-%m-%d %H:%M:%S") + f",{ms % 1000:03d}"


TIME_FORMATS = "milliseconds, 'now' or yyyy-MM-dd#HH:mm:ss:SSS"


def parse_time(text: str, now: int | None = None) -> int:
    """mqadmin timestamps: millis, 'now' (``now`` if given, else the current time), or yyyy-MM-dd#HH:mm:ss:SSS."""
    text = text.strip()
    if text == "now":
        return now_ms() if now is None else now
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        return int(datetime.strptime(text, "%Y-%m-%d#%H:%M:%S:%f").timestamp() * 1000)
    except ValueError:
        raise BadArgument(f"bad time {text!r}: use {TIME_FORMATS}") from None


def mq_json(mq: MessageQueue) -> dict[str, Any]:
    return {"topic": mq.topic, "brokerName": mq.broker_name, "queueId": mq.queue_id}


def topic_config_json(c: TopicConfig) -> dict[str, Any]:
    return {"topicName": c.topic_name, "readQueueNums": c.read_queue_nums, "writeQueueNums": c.write_queue_nums,
            "perm": c.perm, "topicFilterType": java_name(c.topic_filter_type), "topicSysFlag": c.topic_sys_flag,
            "order": c.order}


def topic_opt(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--topic", required=True, help="topic name")


def namesrv_list(args: argparse.Namespace) -> list[str]:
    return [a.strip() for a in (args.namesrv or default_namesrv()).split(";") if a.strip()]


def parse_bool(text: str) -> bool:
    return text.strip().lower() == "true"


_GROUP_FIELDS = (("groupName", "group_name"), ("consumeEnable", "consume_enable"),
                 ("consumeFromMinEnable", "consume_from_min_enable"),
                 ("consumeBroadcastEnable", "consume_broadcast_enable"), ("retryQueueNums", "retry_queue_nums"),
                 ("retryMaxTimes", "retry_max_times"), ("brokerId", "broker_id"),
                 ("whichBrokerWhenConsumeSlowly", "which_broker_when_consume_slowly"),
                 ("notifyConsumerIdsChangedEnable", "notify_consumer_ids_changed_enable"))


def write_text(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def send_result_str(r: Any) -> str:
    """SendResult.toString."""
    return (f"SendResult [sendStatus={java_name(r.send_status)}, msgId={r.msg_id}, offsetMsgId={r.offset_msg_id}, "
            f"messageQueue={mq_str(r.message_queue)}, queueOffset={r.queue_offset}]")


# mqadmin's Java text helpers, reached through this module by tests/test_admin_golden.py
from ..client.java_text import decode_trace, java_hash_order, java_properties_order, java_props  # noqa: E402

__all__ = ["COMMANDS", "Command", "Out", "command", "decode_trace", "java_hash_order", "java_properties_order",
           "java_props", "parse_time"]
