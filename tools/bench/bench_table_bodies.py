"""Peak memory and CPU of one encode of the broker's whole-table bodies, at N entries each.

For each table (topics, consumer offsets, subscription groups) and each place its body is made:
the GET_ALL_* handler, the config file written by the broker's ConfigWriter (snapshot on the trio
thread, encode and write in a worker thread, as the broker does), and for the topics the
REGISTER_BROKER body (plain and compressed). Peak: tracemalloc's peak during one call, above what
was traced before it (the answer's own bytes included). CPU: ``time.process_time`` of one call, best
of ``--runs``, without tracemalloc.

Run: python tools/bench/bench_table_bodies.py [--entries 10000] [--runs 5] [--json]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import trio

from rocketpy.broker.config import BrokerConfig
from rocketpy.broker.groups import ConsumerOffsetManager, SubscriptionGroupManager
from rocketpy.broker.outer import BrokerOuterAPI
from rocketpy.broker.persist import ConfigWriter
from rocketpy.broker.processors import admin
from rocketpy.broker.topics import TopicConfigManager, new_topic
from rocketpy.codecs import RemotingCommand, RequestCode
from rocketpy.codecs.bodies import SubscriptionGroupConfig

QUEUES_PER_OFFSET_ENTRY = 4


def make_tables(entries: int, config_dir: str) -> SimpleNamespace:
    """Topics, subscription groups and offsets (topic@group, 4 queues) of ``entries`` each."""
    topics = TopicConfigManager(config_dir)
    for i in range(entries):
        name = f"BenchTopic-{i:06d}"
        topics.table[name] = new_topic(name, 8, 8)
    groups = SubscriptionGroupManager(config_dir)
    for i in range(entries):
        name = f"BenchGroup-{i:06d}"
        groups.table[name] = SubscriptionGroupConfig(group_name=name)
    offsets = ConsumerOffsetManager(config_dir)
    for i in range(entries):
        offsets.table[f"BenchTopic-{i:06d}@BenchGroup-{i % 100:03d}"] = {
            q: 1_000_000 + i * 7 + q for q in range(QUEUES_PER_OFFSET_ENTRY)
        }
    return SimpleNamespace(topics=topics, groups=groups, offsets=offsets)


def register_api(tables: SimpleNamespace, compressed: bool, permission: int = 6) -> BrokerOuterAPI:
    """The BrokerOuterAPI of a broker with these topics, as it builds its REGISTER_BROKER request."""
    config = BrokerConfig(props={}, broker_name="broker-a", compressed_register=compressed,
                          broker_permission=permission)
    broker = SimpleNamespace(
        config=config,
        topics=tables.topics,
        broker_addr="127.0.0.1:10911",
        ha=SimpleNamespace(ha_server_addr=lambda: "127.0.0.1:10912"),
    )
    return BrokerOuterAPI(broker)  # type: ignore[arg-type]


def _file_write(table: Any) -> Callable[[], Any]:
    writer = ConfigWriter([table])

    def run() -> None:
        table.dirty = True
        trio.run(writer.write_dirty)

    return run


def cases(tables: SimpleNamespace) -> list[tuple[str, str, Callable[[], Any]]]:
    ctx = SimpleNamespace(state=tables)

    def handler(fn: Callable[[Any, RemotingCommand], RemotingCommand], code: int) -> Callable[[], Any]:
        return lambda: fn(ctx, RemotingCommand.request(code))  # type: ignore[arg-type]

    return [
        ("topics", "GET_ALL_TOPIC_CONFIG", handler(admin.get_all_topic_config, RequestCode.GET_ALL_TOPIC_CONFIG)),
        ("topics", "topics.json", _file_write(tables.topics)),
        ("topics", "REGISTER_BROKER body", register_api(tables, False)._request),
        ("topics", "REGISTER_BROKER compressed", register_api(tables, True)._request),
        ("offsets", "GET_ALL_CONSUMER_OFFSET",
         handler(admin.get_all_consumer_offset, RequestCode.GET_ALL_CONSUMER_OFFSET)),
        ("offsets", "consumerOffset.json", _file_write(tables.offsets)),
        ("groups", "GET_ALL_SUBSCRIPTIONGROUP_CONFIG",
         handler(admin.get_all_subscription_group, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)),
        ("groups", "subscriptionGroup.json", _file_write(tables.groups)),
    ]


def _size(result: Any) -> int:
    """The body of an answer or request (a file's size is read from the file)."""
    return len(result.body or b"") if isinstance(result, RemotingCommand) else 0


def peak_of(fn: Callable[[], Any]) -> tuple[int, Any]:
    """(peak bytes above the start, the result) of one call, traced: what it allocates at its peak, the
    result included."""
    fn()  # warm: imports, caches
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        result = fn()
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    return peak, result


def cpu_of(fn: Callable[[], Any], runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        gc.collect()
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5, help="CPU: best of this many calls")
    parser.add_argument("--json", action="store_true", help="one JSON object per case")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as config_dir:
        rows = []
        for table, use, fn in cases(make_tables(args.entries, config_dir)):
            peak, result = peak_of(fn)
            size = os.path.getsize(os.path.join(config_dir, use)) if use.endswith(".json") else _size(result)
            rows.append({"table": table, "use": use, "entries": args.entries, "body_bytes": size,
                         "peak_bytes": peak, "cpu_ms": round(cpu_of(fn, args.runs) * 1000, 2)})
    for row in rows:
        if args.json:
            print(json.dumps(row))
        else:
            print(f"{row['table']:8} {row['use']:34} body {row['body_bytes'] / 1e6:6.2f} MB  "
                  f"peak {row['peak_bytes'] / 1e6:6.2f} MB  cpu {row['cpu_ms']:8.2f} ms")


if __name__ == "__main__":
    main()
