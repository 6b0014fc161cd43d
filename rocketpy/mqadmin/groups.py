"""mqadmin's subcommands about consumer groups and producers: updateSubGroup, deleteSubGroup, consumerProgress,
consumerConnection, producerConnection, brokerConsumeStats, getConsumerConfig, consumerStatus, allocateMQ, producer.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import trio

from ..cli import command_label
from ..client.admin import Admin
from ..client.errors import MQClientError
from ..client.java_text import java_bool, java_hash_order, java_name, java_str, process_queue_str
from ..clock import now_ms
from ..codecs.bodies import MessageQueue, SubscriptionGroupConfig
from ..codecs.codes import MixAll, PermName, version_desc
from ..javacompat.lang import java_string_hash
from .core import (
    _GROUP_FIELDS,
    Out,
    broker_or_cluster_opts,
    command,
    front_string,
    mq_json,
    need_target,
    parse_bool,
    time_str,
    topic_opt,
    write_text,
)


def _update_group_opts(p: argparse.ArgumentParser) -> None:
    broker_or_cluster_opts(p)
    p.add_argument("-g", "--groupName", dest="group", required=True, help="consumer group name")
    p.add_argument("-s", "--consumeEnable", dest="consume_enable", type=parse_bool, default=True,
                   help="consume enabled (true|false)")
    p.add_argument("-m", "--consumeFromMinEnable", dest="from_min", type=parse_bool, default=False,
                   help="a new group starts from the minimum offset (true|false)")
    p.add_argument("-d", "--consumeBroadcastEnable", dest="broadcast", type=parse_bool, default=False,
                   help="broadcast consumption (true|false)")
    p.add_argument("-q", "--retryQueueNums", dest="retry_queues", type=int, default=1, help="retry queue count")
    p.add_argument("-r", "--retryMaxTimes", dest="retry_max", type=int, default=16, help="retries before the DLQ")
    p.add_argument("-i", "--brokerId", dest="broker_id", type=int, default=0, help="consume from this broker id")
    p.add_argument("-w", "--whichBrokerWhenConsumeSlowly", dest="slow_broker", type=int, default=1,
                   help="broker id when consuming slowly")
    p.add_argument("-a", "--notifyConsumerIdsChanged", dest="notify", type=parse_bool, default=True,
                   help="notify consumers when the group changes (true|false)")


def group_config_str(c: SubscriptionGroupConfig) -> str:
    """SubscriptionGroupConfig.toString."""
    return (f"SubscriptionGroupConfig [groupName={c.group_name}, consumeEnable={java_bool(c.consume_enable)}, "
            f"consumeFromMinEnable={java_bool(c.consume_from_min_enable)}, "
            f"consumeBroadcastEnable={java_bool(c.consume_broadcast_enable)}, retryQueueNums={c.retry_queue_nums}, "
            f"retryMaxTimes={c.retry_max_times}, brokerId={c.broker_id}, "
            f"whichBrokerWhenConsumeSlowly={c.which_broker_when_consume_slowly}, "
            f"notifyConsumerIdsChangedEnable={java_bool(c.notify_consumer_ids_changed_enable)}]")


@command("updateSubGroup", "Update or create subscription group", _update_group_opts)
async def update_sub_group(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    need_target(args)
    config = SubscriptionGroupConfig(
        group_name=args.group, consume_enable=args.consume_enable, consume_from_min_enable=args.from_min,
        consume_broadcast_enable=args.broadcast, retry_queue_nums=args.retry_queues, retry_max_times=args.retry_max,
        broker_id=args.broker_id, which_broker_when_consume_slowly=args.slow_broker,
        notify_consumer_ids_changed_enable=args.notify)
    done = []
    for addr in await admin.master_addrs(args.cluster, args.broker_addr):
        await admin.update_sub_group(addr, config)
        out.line(f"create subscription group to {addr} success.")
        done.append(addr)
    out.raw(group_config_str(config))
    out.result({"brokers": done, "subscriptionGroupConfig": json.loads(config.encode())})
    return 0


def _delete_group_opts(p: argparse.ArgumentParser) -> None:
    broker_or_cluster_opts(p)
    p.add_argument("-g", "--groupName", dest="group", required=True, help="consumer group name")
    p.add_argument("-r", "--removeOffset", dest="remove_offset", type=parse_bool, default=False,
                   help="remove the group's offsets too (true|false)")


@command("deleteSubGroup", "Delete subscription group from broker.", _delete_group_opts)
async def delete_sub_group(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    need_target(args)
    done = []
    for addr in await admin.master_addrs(args.cluster, args.broker_addr):
        await admin.delete_sub_group(addr, args.group, args.remove_offset)
        where = f" in cluster [{args.cluster}]" if args.cluster else ""
        out.line(f"delete subscription group [{args.group}] from broker [{addr}]{where} success.")
        done.append(addr)
    topics = []
    if not args.broker_addr:  # -c: the group's retry and dead-letter topics go too, as mqadmin's
        for topic in (MixAll.get_retry_topic(args.group), MixAll.get_dlq_topic(args.group)):
            await admin.delete_topic(topic, args.cluster)
            out.line(f"delete topic [{topic}] from cluster [{args.cluster}] success.")
            out.line(f"delete topic [{topic}] from NameServer success.")
            topics.append(topic)
    out.result({"group": args.group, "brokers": done, "deletedTopics": topics})
    return 0


def _progress_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--groupName", dest="group", help="consumer group (default: every group)")
    p.add_argument("-t", "--topicName", dest="topic", help="only this topic")
    p.add_argument("-s", "--showClientIP", dest="show_ip", type=parse_bool, default=False,
                   help="show the client IP of each queue (true|false)")


def _offset_rows(stats: Any) -> list[tuple[MessageQueue, Any]]:
    return [(mq, stats.offset_table[mq]) for mq in sorted(stats.offset_table)]


@command("consumerProgress", "Query consumers's progress, speed", _progress_opts)
async def consumer_progress(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    if not args.group:
        return await _all_groups_progress(admin, out)
    stats = await admin.consume_stats(args.group, args.topic)
    owners = await _queue_owners(admin, args.group) if args.show_ip else None
    ip_head = f"{'#Client IP':<20} " if owners is not None else ""
    out.line(f"{'#Topic':<64}  {'#Broker Name':<32}  {'#QID':<4}  {'#Broker Offset':<20}  {'#Consumer Offset':<20}  "
             f"{ip_head}{'#Diff':<20}  #LastTime")
    total, rows = 0, []
    for mq, w in _offset_rows(stats):
        diff = w.broker_offset - w.consumer_offset
        total += diff
        ip = f"{owners.get(mq, 'N/A'):<20} " if owners is not None else ""
        out.line(f"{front_string(mq.topic, 64):<64}  {front_string(mq.broker_name, 32):<32}  {mq.queue_id:<4}  "
                 f"{w.broker_offset:<20}  {w.consumer_offset:<20}  {ip}{diff:<20}  {time_str(w.last_timestamp)}")
        row = {**mq_json(mq), "brokerOffset": w.broker_offset, "consumerOffset": w.consumer_offset,
               "diff": diff, "lastTimestamp": w.last_timestamp}
        if owners is not None:
            row["clientIP"] = owners.get(mq)
        rows.append(row)
    out.line()
    out.line(f"Consume TPS: {stats.consume_tps:.2f}")
    out.line(f"Diff Total: {total}")
    out.result({"queues": rows, "consumeTps": stats.consume_tps, "diffTotal": total})
    return 0


async def _queue_owners(admin: Admin, group: str) -> dict[MessageQueue, str]:
    """Which client IP holds each queue, from every online client's running info (as mqadmin's -s: a
    client that cannot be asked is left out, its queues shown as N/A)."""
    owners: dict[MessageQueue, str] = {}
    try:
        cc = await admin.consumer_connection(group)
        for conn in cc.connection_set:
            if not conn.client_id:
                continue
            info = await admin.consumer_running_info(group, conn.client_id)
            for mq in info.mq_table or {}:
                owners[mq] = conn.client_id.split("@")[0]
    except MQClientError:
        pass
    return owners


async def _all_groups_progress(admin: Admin, out: Out) -> int:
    out.line(f"{'#Group':<64}  {'#Count':<6}  {'#Version':<24} {'#Type':<5}  {'#Model':<14}  {'#TPS':<7}  #Diff Total")
    rows = []
    for topic in await admin.topic_list():
        if not topic.startswith(MixAll.RETRY_GROUP_TOPIC_PREFIX):
            continue
        group = topic[len(MixAll.RETRY_GROUP_TOPIC_PREFIX):]
        tps, diff, count, version, ctype, model = 0, 0, 0, "OFFLINE", "", ""
        try:
            stats = await admin.consume_stats(group)
            tps, diff = int(stats.consume_tps), stats.total_diff()
        except MQClientError:
            pass
        try:
            cc = await admin.consumer_connection(group)
            count = len(cc.connection_set)
            if count:
                version = version_desc(min(c.version for c in cc.connection_set))
            ctype = {"CONSUME_ACTIVELY": "PULL", "CONSUME_PASSIVELY": "PUSH"}.get(java_name(cc.consume_type), "")
            model = java_name(cc.message_model) if cc.message_model is not None else ""
        except MQClientError:
            pass
        out.line(f"{front_string(group, 64):<64}  {count:<6}  {version:<24} {ctype:<5}  {model:<14}  {tps:<7}  {diff}")
        rows.append({"group": group, "count": count, "version": version, "type": ctype, "model": model,
                     "tps": tps, "diffTotal": diff})
    out.result(rows)
    return 0


def _group_opt(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--consumerGroup", dest="group", required=True, help="consumer group name")
    p.add_argument("-b", "--brokerAddr", dest="broker_addr", help="ask this broker (default: the group's)")


@command("consumerConnection", "Query consumer's socket connection, client version and subscription", _group_opt)
async def consumer_connection(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    cc = await admin.consumer_connection(args.group, args.broker_addr)
    out.line(f"{'#ClientId':<36} {'#ClientAddr':<22} {'#Language':<10} #Version")
    for c in cc.connection_set:
        out.line(f"{java_str(c.client_id):<36} {java_str(c.client_addr):<22} {java_name(c.language):<10} "
                 f"{version_desc(c.version)}")
    out.line()
    out.line("Below is subscription:")
    out.line(f"{'#Topic':<20} #SubExpression")
    for sd in cc.subscription_table.values():
        out.line(f"{java_str(sd.topic):<20} {java_str(sd.sub_string)}")
    out.line()
    out.line(f"ConsumeType: {java_name(cc.consume_type)}")
    out.line(f"MessageModel: {java_name(cc.message_model)}")
    out.line(f"ConsumeFromWhere: {java_name(cc.consume_from_where)}")
    out.result({
        "connections": [_connection_json(c) for c in cc.connection_set],
        "subscriptions": {t: sd.sub_string for t, sd in cc.subscription_table.items()},
        "consumeType": java_name(cc.consume_type), "messageModel": java_name(cc.message_model),
        "consumeFromWhere": java_name(cc.consume_from_where),
    })
    return 0


def _connection_json(c: Any) -> dict[str, Any]:
    return {"clientId": c.client_id, "clientAddr": c.client_addr, "language": java_name(c.language),
            "version": version_desc(c.version)}


def _producer_conn_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--producerGroup", dest="group", required=True, help="producer group name")
    topic_opt(p)


@command("producerConnection", "Query producer's socket connection and client version", _producer_conn_opts)
async def producer_connection(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    pc = await admin.producer_connection(args.group, args.topic)
    for i, c in enumerate(pc.connection_set, 1):
        out.line(f"{i:04d}  {java_str(c.client_id):<32} {java_str(c.client_addr):<22} {java_name(c.language):<8} "
                 f"{version_desc(c.version)}")
    out.result([_connection_json(c) for c in pc.connection_set])
    return 0


def _broker_consume_stats_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-b", "--brokerAddr", dest="broker_addr", required=True, help="broker address host:port")
    p.add_argument("-o", "--order", type=parse_bool, default=False, help="ordered groups only (true|false)")
    p.add_argument("-l", "--level", type=int, default=0, help="only queues with at least this lag")
    p.add_argument("-t", "--timeoutMillis", dest="timeout_ms", type=int, default=50000,
                   help="request timeout in milliseconds")


@command("brokerConsumeStats", "Fetch broker consume stats data", _broker_consume_stats_opts)
async def broker_consume_stats(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    admin.timeout = args.timeout_ms / 1000
    stats_list = await admin.broker_consume_stats(args.broker_addr, args.order)
    out.line(f"{'#Topic':<64}  {'#Group':<64}  {'#Broker Name':<32}  {'#QID':<4}  {'#Broker Offset':<20}  "
             f"{'#Consumer Offset':<20}  {'#Diff':<20}  #LastTime")
    rows = []
    for by_group in stats_list.consume_stats_list:
        for group, stats_of_topics in by_group.items():
            for stats in stats_of_topics:
                for mq, w in _offset_rows(stats):
                    diff = w.broker_offset - w.consumer_offset
                    if diff < args.level or w.last_timestamp <= 0:
                        continue
                    out.line(f"{front_string(mq.topic, 64):<64}  {group:<64}  {front_string(mq.broker_name, 32):<32}  "
                             f"{mq.queue_id:<4}  {w.broker_offset:<20}  {w.consumer_offset:<20}  {diff:<20}  "
                             f"{time_str(w.last_timestamp)}")
                    rows.append({**mq_json(mq), "group": group, "brokerOffset": w.broker_offset,
                                 "consumerOffset": w.consumer_offset, "diff": diff,
                                 "lastTimestamp": w.last_timestamp})
    out.line()
    out.line(f"Diff Total: {stats_list.total_diff}")
    out.result({"queues": rows, "diffTotal": stats_list.total_diff})
    return 0


def _group_name_opt(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--groupName", dest="group", required=True, help="consumer group name")


@command("getConsumerConfig", "Get consumer config by subscription group name!", _group_name_opt)
async def get_consumer_config(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    info = await admin.cluster_info()
    result = []
    for name, bd in (info.broker_addr_table or {}).items():
        cluster = next((c for c, names in (info.cluster_addr_table or {}).items() if name in names), "")
        addrs = {int(k): a for k, a in (bd.broker_addrs or {}).items()}
        addr = addrs.get(0) or next(iter(addrs.values()), None)
        if addr is None:
            continue
        config = await admin.sub_group_config(addr, args.group)
        if config is None:
            continue
        out.line(f"============================={cluster}:{name}=============================")
        values = {java: getattr(config, attr) for java, attr in _GROUP_FIELDS}
        for java, value in values.items():
            shown = java_bool(value) if isinstance(value, bool) else ("" if value is None else value)
            out.line(f"{java:<40}=  {shown}")
        result.append({"cluster": cluster, "brokerName": name, "config": values})
    out.result(result)
    return 0


def running_info_str(info: Any) -> str:
    """ConsumerRunningInfo.formatString."""
    lines = ["#Consumer Properties#"]
    lines += [f"{k:<40}: {java_name(v) if not isinstance(v, (str, int, float)) else v}"
              for k, v in info.properties.items()]
    lines += ["", "", "#Consumer Subscription#"]
    subs = sorted(info.subscription_set, key=lambda sd: sd.topic or "")
    for i, sd in enumerate(subs, 1):
        lines.append(f"{i:03d} Topic: {java_str(sd.topic):<40} ClassFilter: {java_bool(sd.class_filter_mode):<8} "
                     f"SubExpression: {java_str(sd.sub_string)}")
    lines += ["", "", "#Consumer Offset#",
              f"{'#Topic':<64}  {'#Broker Name':<32}  {'#QID':<4}  {'#Consumer Offset':<20}"]
    table = sorted(info.mq_table.items())
    lines += [f"{mq.topic:<32}  {mq.broker_name:<32}  {mq.queue_id:<4}  {pq.commit_offset:<20}" for mq, pq in table]
    lines += ["", "", "#Consumer MQ Detail#", f"{'#Topic':<64}  {'#Broker Name':<32}  {'#QID':<4}  "
                                                 f"{'#ProcessQueueInfo':<20}"]
    lines += [f"{mq.topic:<64}  {mq.broker_name:<32}  {mq.queue_id:<4}  {process_queue_str(pq)}" for mq, pq in table]
    lines += ["", "", "#Consumer RT&TPS#", f"{'#Topic':<64}  {'#Pull RT':>14} {'#Pull TPS':>14} {'#Consume RT':>14} "
                                               f"{'#ConsumeOK TPS':>14} {'#ConsumeFailed TPS':>18} "
                                               f"{'#ConsumeFailedMsgsInHour':>25}"]
    for topic, st in sorted(info.status_table.items()):
        lines.append(f"{topic:<32}  {st.pull_rt:>14.2f} {st.pull_tps:>14.2f} {st.consume_rt:>14.2f} "
                     f"{st.consume_ok_tps:>14.2f} {st.consume_failed_tps:>18.2f} {st.consume_failed_msgs:>25}")
    text = "\n".join(lines) + "\n"
    if info.jstack:
        text += "\n\n#Consumer jstack#\n" + info.jstack
    return text


def _consumer_status_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--consumerGroup", dest="group", required=True, help="consumer group name")
    p.add_argument("-i", "--clientId", dest="client_id", help="only this client, its whole running info")
    p.add_argument("-s", "--jstack", action="store_true", help="ask for the client's thread stacks too")
    p.add_argument("-b", "--brokerAddr", dest="broker_addr", help="list the clients this broker knows")


@command("consumerStatus", "Query consumer's internal data structure", _consumer_status_opts)
async def consumer_status(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    group = args.group.strip()
    if args.client_id:
        info = await admin.consumer_running_info(group, args.client_id.strip(), args.jstack)
        out.raw(running_info_str(info))
        out.result(_running_info_json(info))
        return 0
    cc = await admin.consumer_connection(group, args.broker_addr)
    now = now_ms()
    infos: dict[str, Any] = {}
    out.line(f"{'#Index':<10} {'#ClientId':<40} {'#Version':<20} #ConsumerRunningInfoFile")
    index = 1
    for conn in cc.connection_set:
        try:
            info = await admin.consumer_running_info(group, conn.client_id or "", args.jstack)
        except MQClientError as exc:
            print(f"{command_label('admin consumerStatus')}: {conn.client_id}: {exc}", file=sys.stderr)
            continue
        infos[conn.client_id or ""] = info
        path = f"{now}/{conn.client_id}"  # as mqadmin: relative to the working directory
        await trio.to_thread.run_sync(write_text, path, running_info_str(info))
        out.line(f"{index:<10} {java_str(conn.client_id):<40} {version_desc(conn.version):<20} {path}")
        index += 1
    result: dict[str, Any] = {"clients": {c: _running_info_json(i) for c, i in infos.items()}}
    if infos:
        subs = {frozenset((sd.topic, sd.sub_string) for sd in i.subscription_set) for i in infos.values()}
        result["sameSubscription"] = len(subs) == 1
        if len(subs) == 1:
            out.raw("\n\nSame subscription in the same group of consumer")
            out.raw("\n\nRebalance OK\n")
        else:
            out.raw("\n\nWARN: Different subscription in the same group of consumer!!!")
    out.result(result)
    return 0


def _running_info_json(info: Any) -> dict[str, Any]:
    return {
        "properties": {k: v if isinstance(v, (str, int, float, bool)) else java_name(v)
                       for k, v in info.properties.items()},
        "subscriptions": {sd.topic: sd.sub_string for sd in info.subscription_set},
        "queues": [{**mq_json(mq), "commitOffset": pq.commit_offset, "cachedMsgCount": pq.cached_msg_count}
                   for mq, pq in sorted(info.mq_table.items())],
    }


def _allocate_opts(p: argparse.ArgumentParser) -> None:
    topic_opt(p)
    p.add_argument("-i", "--ipList", dest="ips", required=True, help="consumer ids, comma separated")


@command("allocateMQ", "Allocate MQ", _allocate_opts)
async def allocate_mq(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    from ..client.allocate import AllocateAveragely

    topic = args.topic.strip()
    route = await admin.topic_route(topic)
    queues = [MessageQueue(topic=topic, broker_name=qd.broker_name, queue_id=i)
              for qd in route.queue_datas or [] if PermName.is_readable(qd.perm) for i in range(qd.read_queue_nums)]
    queues = java_hash_order(queues)  # mqadmin allocates from a HashSet, in its order
    ips = args.ips.strip().split(",")
    strategy = AllocateAveragely()
    result = {ip: strategy.allocate("aa", ip, queues, ips) for ip in ips}

    def mqs(ip: str) -> str:
        return ",".join(f'{{"brokerName":"{q.broker_name}","queueId":{q.queue_id},"topic":"{q.topic}"}}'
                        for q in result[ip])

    # fastjson's compact form of RebalanceResult (a HashMap of ip -> queues; fields sorted by name)
    out.line('{"result":{' + ",".join(f'"{ip}":[{mqs(ip)}]' for ip in java_hash_order(ips, java_string_hash)) + "}}")
    out.result({ip: [mq_json(q) for q in qs] for ip, qs in result.items()})
    return 0


def _producer_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-b", "--broker", dest="broker_addr", required=True, help="broker address host:port")


@command("producer", "Query producer's instances, connection, status, etc.", _producer_opts)
async def producer(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    table = await admin.all_producer_info(args.broker_addr.strip())
    result: dict[str, list[dict[str, Any]]] = {}
    for group, infos in (table.data or {}).items():
        if not infos:
            out.line(f"producer group ({group}) instances are empty")
        for p in infos or []:
            out.line(f"producer group ({group}) instance : clientId={p.client_id},remoteIP={p.remote_ip}, "
                     f"language={java_name(p.language)}, version={p.version}, "
                     f"lastUpdateTimestamp={p.last_update_timestamp}")
        result[group] = [{"clientId": p.client_id, "remoteIP": p.remote_ip, "language": java_name(p.language),
                          "version": p.version, "lastUpdateTimestamp": p.last_update_timestamp} for p in infos or []]
    out.result(result)
    return 0
