"""The broker's whole-table bodies are written without their whole JSON tree (issue 24).

A GET_ALL_* answer, the REGISTER_BROKER body and the config files of a broker with thousands of topics,
groups or offsets used to be built as one JSON tree and then as the writer's pieces: a burst of small
objects a few times the body's size, opening pymalloc arenas that longer-lived objects then kept resident.
Each is now written entry by entry: what is held at once is about the body's own bytes. Measured with
tracemalloc (deterministic, not timed), through the paths the broker takes.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from rocketpy.broker.processors import admin
from rocketpy.codecs import RemotingCommand, RequestCode
from rocketpy.codecs.bodies import RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper

BENCH = Path(__file__).resolve().parent.parent / "tools" / "bench" / "bench_table_bodies.py"
ENTRIES = 5_000


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    """tools/bench/bench_table_bodies.py: its tables, its REGISTER_BROKER builder and its traced peak."""
    spec = importlib.util.spec_from_file_location("bench_table_bodies", BENCH)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_table_bodies"] = mod
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop("bench_table_bodies", None)


@pytest.fixture
def tables(bench: ModuleType, tmp_path: Path) -> SimpleNamespace:
    return bench.make_tables(ENTRIES, str(tmp_path))  # type: ignore[no-any-return]


#: peak / body size at most: about the body's own bytes, a buffer's growth and (for a file) the snapshot's dict
#: copy. The whole tree and the writer's pieces took 3 to 10 times the body (3.1 the least, subscriptionGroup.json)
BOUND = 2.2


def _answer(bench: ModuleType, handler: Callable[[Any, RemotingCommand], RemotingCommand], tables: SimpleNamespace,
            code: int) -> float:
    """peak / body size of one GET_ALL_* answer (the handler as the broker calls it)."""
    peak, response = bench.peak_of(lambda: handler(SimpleNamespace(state=tables), RemotingCommand.request(code)))
    assert response.code == 0 and len(response.body) > 300_000
    return peak / len(response.body)


def _file(bench: ModuleType, table: Any, name: str, config_dir: Path) -> float:
    """peak / file size of one config file write: the table's persist (its snapshot, encode and write,
    which the ConfigWriter runs in a worker thread), called here directly."""
    peak, _ = bench.peak_of(table.persist)
    return peak / (config_dir / name).stat().st_size


def _register(bench: ModuleType, tables: SimpleNamespace, compressed: bool) -> tuple[int, bytes]:
    peak, request = bench.peak_of(bench.register_api(tables, compressed)._request)
    registered = RegisterBrokerBody.decode(request.body, compressed).topic_config_serialize_wrapper
    assert registered is not None and len(registered.topic_config_table) == len(tables.topics.table)
    return peak, request.body


def test_topic_table_bodies_are_written_without_their_tree(bench: ModuleType, tables: SimpleNamespace,
                                                           tmp_path: Path) -> None:
    plain_peak, plain = _register(bench, tables, False)
    compressed_peak, _ = _register(bench, tables, True)
    ratios = {
        "GET_ALL_TOPIC_CONFIG": _answer(bench, admin.get_all_topic_config, tables, RequestCode.GET_ALL_TOPIC_CONFIG),
        "topics.json": _file(bench, tables.topics, "topics.json", tmp_path),
        "REGISTER_BROKER": plain_peak / len(plain),
    }
    over: dict[str, float] = {use: r for use, r in ratios.items() if r >= BOUND}
    # compressed: zlib's state (300 KiB) and 16 KiB of lines; every line was held, then all joined (2.2 MiB)
    if compressed_peak >= 512 * 1024:
        over["REGISTER_BROKER compressed, bytes"] = compressed_peak
    assert not over, (over, ratios)


def test_consumer_offset_bodies_are_written_without_their_tree(bench: ModuleType, tables: SimpleNamespace,
                                                              tmp_path: Path) -> None:
    ratios = {
        "GET_ALL_CONSUMER_OFFSET": _answer(bench, admin.get_all_consumer_offset, tables,
                                           RequestCode.GET_ALL_CONSUMER_OFFSET),
        "consumerOffset.json": _file(bench, tables.offsets, "consumerOffset.json", tmp_path),
    }
    assert all(r < BOUND for r in ratios.values()), ratios


def test_subscription_group_bodies_are_written_without_their_tree(bench: ModuleType, tables: SimpleNamespace,
                                                                 tmp_path: Path) -> None:
    ratios = {
        "GET_ALL_SUBSCRIPTIONGROUP_CONFIG": _answer(
            bench, admin.get_all_subscription_group, tables, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG
        ),
        "subscriptionGroup.json": _file(bench, tables.groups, "subscriptionGroup.json", tmp_path),
    }
    assert all(r < BOUND for r in ratios.values()), ratios


@pytest.mark.parametrize("compressed", [False, True])
def test_register_body_with_a_masked_table_is_the_whole_one(bench: ModuleType, tables: SimpleNamespace,
                                                            compressed: bool) -> None:
    # a broker without write permission advertises each topic's perm masked by its own, as it always did
    data = bench.register_api(tables, compressed, permission=4)._request().body
    masked = {}
    for name, tc in tables.topics.table.items():
        masked[name] = TopicConfig.from_json(tc.to_json())
        masked[name].perm = tc.perm & 4
    whole = TopicConfigSerializeWrapper(topic_config_table=masked, data_version=tables.topics.data_version)
    assert data == RegisterBrokerBody(topic_config_serialize_wrapper=whole, filter_server_list=[]).encode(compressed)
    assert {tc.perm for tc in tables.topics.table.values()} != {4}  # the table itself is left as it was
