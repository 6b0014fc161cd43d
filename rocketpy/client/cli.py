"""``rocketpy produce``, ``rocketpy consume`` and ``rocketpy admin ...`` (mqadmin's commands)."""

from __future__ import annotations

import argparse
import base64
import json
import sys
from typing import Any

import trio

from ..codecs.codes import ConsumeFromWhere
from ..codecs.message import MessageExt
from .cli_tls import add_tls_options, tls_options
from .config import ClientConfig, default_namesrv
from .errors import MQClientError
from .message import make_message
from .producer import Producer
from .push_consumer import PushConsumer


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from . import cli_admin

    p = sub.add_parser("produce", help="send each stdin line as a message; print one JSON line per result")
    _namesrv(p)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-g", "--group", default="rocketpy_cli_producer")
    p.add_argument("--tag")
    p.add_argument("--keys", help="space-separated keys")
    p.add_argument("--property", action="append", default=[], metavar="K=V", help="user property (repeatable)")
    p.add_argument("--delay-level", type=int, default=0)
    p.set_defaults(func=cmd_produce)

    c = sub.add_parser("consume", help="print one JSON line per message; stop after N messages or S quiet seconds")
    _namesrv(c)
    c.add_argument("-t", "--topic", required=True)
    c.add_argument("-g", "--group", required=True)
    c.add_argument("--tag-expr", default="*")
    c.add_argument("--count", type=int, default=0, help="exit after this many messages (0: no limit)")
    c.add_argument("--timeout", type=float, default=10.0, help="exit after this many seconds without a message")
    c.add_argument("--from", dest="from_where", choices=["first", "last"], default="first",
                   help="where a new group starts (default: first)")
    c.set_defaults(func=cmd_consume)

    cli_admin.add_parser(sub)


def _namesrv(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", "--namesrv", default=None,
                   help=f"name server address list, ';' separated (default: $ROCKETMQ_NAMESRV or {default_namesrv()})")
    add_tls_options(p)


def _config(args: argparse.Namespace) -> ClientConfig:
    return ClientConfig(namesrv_addr=args.namesrv or default_namesrv(), **tls_options(args))



def _props(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        k, sep, v = item.partition("=")
        if not sep or not k:
            raise SystemExit(f"--property wants K=V, got {item!r}")
        out[k] = v
    return out


def cmd_produce(args: argparse.Namespace) -> int:
    props = _props(args.property)

    async def main() -> int:
        failures = 0
        async with Producer(args.group, config=_config(args)) as producer:
            lines = await trio.to_thread.run_sync(sys.stdin.buffer.read)
            for raw in lines.splitlines():
                msg = make_message(args.topic, raw, tags=args.tag, keys=args.keys, properties=props,
                                   delay_level=args.delay_level or None)
                try:
                    result = await producer.send(msg)
                    print(json.dumps(result.to_dict()), flush=True)
                except MQClientError as exc:
                    failures += 1
                    print(json.dumps({"status": "ERROR", "error": str(exc)}), flush=True)
        return 1 if failures else 0

    return trio.run(main)


def message_json(msg: MessageExt) -> dict[str, Any]:
    body = msg.decompressed_body()
    out: dict[str, Any] = {
        "msgId": msg.client_msg_id, "topic": msg.topic, "tags": msg.tags, "keys": msg.keys_string,
        "properties": dict(msg.properties), "queueId": msg.queue_id, "queueOffset": msg.queue_offset,
        "reconsumeTimes": msg.reconsume_times,
    }
    try:
        out["body"] = body.decode("utf-8")
    except UnicodeDecodeError:
        out["body"] = base64.b64encode(body).decode("ascii")
        out["bodyBase64"] = True
    return out


def cmd_consume(args: argparse.Namespace) -> int:
    async def main() -> int:
        seen = 0
        done = trio.Event()
        last = trio.current_time()

        async def listener(msgs: list[MessageExt], ctx: Any) -> None:
            nonlocal seen, last
            for m in msgs:
                if args.count and seen >= args.count:
                    return
                print(json.dumps(message_json(m), ensure_ascii=False), flush=True)
                seen += 1
                last = trio.current_time()
            if args.count and seen >= args.count:
                done.set()

        where = (ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET if args.from_where == "first"
                 else ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET)
        config = _config(args)
        config.rebalance_interval = 2.0
        consumer = PushConsumer(args.group, listener, config=config, consume_from_where=where, consume_concurrency=1)
        consumer.subscribe(args.topic, args.tag_expr)
        async with consumer:
            while not done.is_set() and trio.current_time() - last < args.timeout:
                with trio.move_on_after(0.1):
                    await done.wait()
        return 0

    return trio.run(main)
