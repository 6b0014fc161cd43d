"""The broker's whole-table bodies are written without their whole JSON tree (issue 24).

A GET_ALL_* answer, the REGISTER_BROKER body and the config files of a broker with thousands of topics,
groups or offsets used to be built as one JSON tree and then as the writer's pieces: a burst of small
objects a few times the body's size, opening pymalloc arenas that longer-lived objects then kept resident.
Each is now written entry by entry: what is held at once is about the body's own bytes. Measured with
tracemalloc (deterministic, not timed), through the paths the broker takes.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rocketpy.broker.config import BrokerConfig
from rocketpy.broker.groups import ConsumerOffsetManager, SubscriptionGroupManager
from rocketpy.broker.outer import BrokerOuterAPI
from rocketpy.broker.processors import admin
from rocketpy.broker.topics import TopicConfigManager, new_topic
from rocketpy.codecs import RemotingCommand, RequestCode
from rocketpy.codecs.bodies import (
    RegisterBrokerBody,
    SubscriptionGroupConfig,
    TopicConfig,
    TopicConfigSerializeWrapper,
)

ENTRIES = 5_000


def _tables(config_dir: Path) -> SimpleNamespace:
    topics = TopicConfigManager(str(config_dir))
    groups = SubscriptionGroupManager(str(config_dir))
    offsets = ConsumerOffsetManager(str(config_dir))
    for i in range(ENTRIES):
        topics.table[f"Topic-{i:05d}"] = new_topic(f"Topic-{i:05d}", 8, 8)
        groups.table[f"Group-{i:05d}"] = SubscriptionGroupConfig(group_name=f"Group-{i:05d}")
        offsets.table[f"Topic-{i:05d}@Group-{i % 50:02d}"] = {q: 1_000_000 + i + q for q in range(4)}
    return SimpleNamespace(topics=topics, groups=groups, offsets=offsets)


def _peak(fn: Callable[[], Any]) -> tuple[int, Any]:
    """What one call allocates at its peak (its result included), and the result."""
    fn()  # imports, caches
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        result = fn()
        return tracemalloc.get_traced_memory()[1] - start, result
    finally:
        tracemalloc.stop()


#: peak / body size at most: about the body's own bytes, a buffer's growth and (for a file) the snapshot's dict
#: copy. The whole tree and the writer's pieces took 3 to 10 times the body (3.1 the least, subscriptionGroup.json)
BOUND = 2.2


def _answer(handler: Callable[[Any, RemotingCommand], RemotingCommand], tables: SimpleNamespace, code: int) -> float:
    """peak / body size of one GET_ALL_* answer (the handler as the broker calls it)."""
    peak, response = _peak(lambda: handler(SimpleNamespace(state=tables), RemotingCommand.request(code)))
    assert response.code == 0 and len(response.body) > 300_000
    return peak / len(response.body)


def _file(table: Any, name: str, config_dir: Path) -> float:
    """peak / file size of one config file write (the snapshot and its encode, as the ConfigWriter does them)."""
    table.dirty = True
    peak, _ = _peak(table.persist)
    return peak / (config_dir / name).stat().st_size


def _register(tables: SimpleNamespace, compressed: bool) -> tuple[int, bytes]:
    broker = SimpleNamespace(
        config=BrokerConfig(props={}, broker_name="broker-a", compressed_register=compressed),
        topics=tables.topics,
        broker_addr="127.0.0.1:10911",
        ha=SimpleNamespace(ha_server_addr=lambda: "127.0.0.1:10912"),
    )
    peak, request = _peak(BrokerOuterAPI(broker)._request)  # type: ignore[arg-type]
    registered = RegisterBrokerBody.decode(request.body, compressed).topic_config_serialize_wrapper
    assert registered is not None and len(registered.topic_config_table) == len(tables.topics.table)
    return peak, request.body


def test_topic_table_bodies_are_written_without_their_tree(tmp_path: Path) -> None:
    tables = _tables(tmp_path)
    plain_peak, plain = _register(tables, False)
    compressed_peak, _ = _register(tables, True)
    ratios = {
        "GET_ALL_TOPIC_CONFIG": _answer(admin.get_all_topic_config, tables, RequestCode.GET_ALL_TOPIC_CONFIG),
        "topics.json": _file(tables.topics, "topics.json", tmp_path),
        "REGISTER_BROKER": plain_peak / len(plain),
    }
    over: dict[str, float] = {use: r for use, r in ratios.items() if r >= BOUND}
    # compressed: zlib's state (300 KiB) and 16 KiB of lines; every line was held, then all joined (2.2 MiB)
    if compressed_peak >= 512 * 1024:
        over["REGISTER_BROKER compressed, bytes"] = compressed_peak
    assert not over, (over, ratios)


def test_consumer_offset_bodies_are_written_without_their_tree(tmp_path: Path) -> None:
    tables = _tables(tmp_path)
    ratios = {
        "GET_ALL_CONSUMER_OFFSET": _answer(admin.get_all_consumer_offset, tables, RequestCode.GET_ALL_CONSUMER_OFFSET),
        "consumerOffset.json": _file(tables.offsets, "consumerOffset.json", tmp_path),
    }
    assert all(r < BOUND for r in ratios.values()), ratios


def test_subscription_group_bodies_are_written_without_their_tree(tmp_path: Path) -> None:
    tables = _tables(tmp_path)
    ratios = {
        "GET_ALL_SUBSCRIPTIONGROUP_CONFIG": _answer(
            admin.get_all_subscription_group, tables, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG
        ),
        "subscriptionGroup.json": _file(tables.groups, "subscriptionGroup.json", tmp_path),
    }
    assert all(r < BOUND for r in ratios.values()), ratios


@pytest.mark.parametrize("compressed", [False, True])
def test_register_body_with_a_masked_table_is_the_whole_one(tmp_path: Path, compressed: bool) -> None:
    # a broker without write permission advertises each topic's perm masked by its own, as it always did
    tables = _tables(tmp_path)
    cfg = BrokerConfig(props={}, broker_name="broker-a", compressed_register=compressed, broker_permission=4)
    broker = SimpleNamespace(config=cfg, topics=tables.topics, broker_addr="a:1",
                             ha=SimpleNamespace(ha_server_addr=lambda: "a:2"))
    data = BrokerOuterAPI(broker)._request().body  # type: ignore[arg-type]
    masked = {}
    for name, tc in tables.topics.table.items():
        masked[name] = TopicConfig.from_json(tc.to_json())
        masked[name].perm = tc.perm & 4
    whole = TopicConfigSerializeWrapper(topic_config_table=masked, data_version=tables.topics.data_version)
    assert data == RegisterBrokerBody(topic_config_serialize_wrapper=whole, filter_server_list=[]).encode(compressed)
    assert {tc.perm for tc in tables.topics.table.values()} != {4}  # the table itself is left as it was
