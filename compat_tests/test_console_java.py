"""The console against the official Java 4.9.8 NameServer and broker, and Java's mqadmin against our broker.

Runs when ROCKETMQ_JAVA_REF names the reference install (``bin/namesrv.sh``, ``bin/broker.sh``,
``bin/mqadmin.sh``); skips with the reason otherwise. The same scenario (a topic, N messages, a group
N/2 behind) runs on the Java servers and on ours, and the console's data must agree: topics, groups,
queue offsets, lag and today's put count. Java's ``mqadmin brokerStatus`` then reads our broker's real
counters.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import trio

pytest.importorskip("starlette")

from rocketpy.client import ClientConfig, Producer, make_message  # noqa: E402
from rocketpy.client.admin import Admin  # noqa: E402
from rocketpy.console.data import ConsoleData  # noqa: E402
from rocketpy.console.metrics_cache import render  # noqa: E402
from rocketpy.console.testing import console_cluster, make_topic_and_groups  # noqa: E402
from rocketpy.testing import free_broker_port  # noqa: E402

from .servers import java_broker, java_namesrv  # noqa: E402

N = 12
TOPIC, GROUP = "TConsoleJava", "GConsoleJava"
pytestmark = pytest.mark.timeout(240)


async def scenario(namesrv: str) -> dict[str, Any]:
    """Create the topic and group, send N, commit the group at N/2 on each queue's share; read it back."""
    async with Admin(namesrv) as admin:
        data = ConsoleData(admin)
        await make_topic_and_groups(admin, TOPIC, GROUP)
        # a Java broker answers GET_BROKER_RUNTIME_INFO with SYSTEM_ERROR (NoSuchElementException) until its
        # StoreStatsService has taken a first sample: wait for a clean answer, as a console user would see one
        with trio.fail_after(30):
            while any(b.error for b in await data.brokers()):
                await trio.sleep(0.2)
        before = {b.name: b.put_today for b in await data.brokers()}
        async with Producer("PConsoleJava", config=ClientConfig(namesrv_addr=namesrv)) as p:
            for i in range(N):
                await p.send(make_message(TOPIC, f"m{i}", keys=f"key-{i}"))
        route = await admin.topic_route(TOPIC)
        masters = {bd.broker_name: bd.master_addr() for bd in route.broker_datas or []}
        for mq, (_lo, hi) in (await admin.queue_bounds(TOPIC)).items():
            await admin.client.api.update_consumer_offset(masters[mq.broker_name], GROUP, mq, hi // 2)
        detail = await data.topic_detail(TOPIC)
        group = await data.group_detail(GROUP)
        by_key = await data.by_key(TOPIC, "key-3")
        brokers = await data.brokers()
        return {
            "topics": [t for t in await data.topics() if t.startswith("TConsole")],
            "groups": [g for g in await data.group_names() if g.startswith("GConsole")],
            "queues": sorted((mq.queue_id, o.min_offset, o.max_offset) for mq, o in detail["queues"]),
            "lag": group["lag"],
            "put_today": sum(b.put_today for b in brokers) - sum(before.values()),
            "versions": sorted({b.version for b in brokers}),
            "by_key": [m.body for m in by_key],
            "metrics": (await render(data)).decode(),
        }


async def test_console_shows_the_same_on_java_servers_and_ours(java_ref: Path, tmp_path: Path) -> None:
    ns_port = free_broker_port()
    async with java_namesrv(java_ref, ns_port, tmp_path) as namesrv:
        port = free_broker_port()
        async with java_broker(java_ref, port, namesrv, tmp_path / "java-store", {"autoCreateTopicEnable": "true"}):
            java = await scenario(namesrv)
    async with console_cluster(str(tmp_path / "ours")) as c:
        ours = await scenario(c.namesrv)
    assert java["topics"] == ours["topics"] == [TOPIC]
    assert java["groups"] == ours["groups"] == [GROUP]
    assert java["queues"] == ours["queues"] and sum(hi for _, _, hi in ours["queues"]) == N
    assert java["lag"] == ours["lag"] == N - sum(hi // 2 for _, _, hi in ours["queues"])
    assert java["put_today"] == ours["put_today"] == N
    assert java["versions"] == ours["versions"] == ["V4_9_8"]
    assert java["by_key"] == ours["by_key"] == [b"m3"]
    for text in (java["metrics"], ours["metrics"]):
        assert re.search(rf'rocketmq_producer_offset\{{broker="broker-a",cluster="DefaultCluster",topic="{TOPIC}"\}} '
                         rf"{N}\.0", text)
        # msgModel: the model's ordinal, as the exporter writes it (CLUSTERING is 1)
        assert re.search(rf'rocketmq_group_diff\{{countOfOnlineConsumers="0",group="{GROUP}",msgModel="1",'
                         rf'topic="{TOPIC}"\}} ', text)
        assert re.search(r'rocketmq_brokeruntime_msg_put_total_today_now\{.*des="V4_9_8".*\} [1-9]', text)
        assert re.search(r'rocketmq_brokeruntime_commitlogdir_capacity_total\{.*\} [1-9]', text)
        assert re.search(rf'rocketmq_consumer_offset\{{.*group="{GROUP}".*\}} [1-9]', text)


async def test_java_mqadmin_broker_status_reads_our_counters(java_ref: Path, tmp_path: Path) -> None:
    async with console_cluster(str(tmp_path)) as c:
        async with Producer("PStatus", config=ClientConfig(namesrv_addr=c.namesrv)) as p:
            for i in range(N):
                await p.send(make_message("TStatusJava", f"m{i}"))
        await trio.sleep(11)  # the 10-sample putTps window fills (one sample a second)
        out = await trio.run_process(["bash", str(java_ref / "bin" / "mqadmin.sh"), "brokerStatus", "-n", c.namesrv,
                                      "-b", c.broker.broker_addr], capture_stdout=True, capture_stderr=True)
    text = out.stdout.decode()
    table = dict(re.findall(r"^(\S+)\s*: (.*)$", text, re.M))
    assert int(table["msgPutTotalTodayNow"]) >= N, text
    assert len(table["putTps"].split(" ")) == 3 and float(table["putTps"].split(" ")[0]) >= 0.0, text
    assert table["commitLogDirCapacity"].startswith("Total : "), text
    assert int(table["putMessageSizeTotal"]) > 0, text


async def test_java_mqadmin_reads_the_python_clients_traces(java_ref: Path, tmp_path: Path) -> None:
    from rocketpy.client import ConsumeFromWhere, PushConsumer

    seen: list[str] = []
    async with console_cluster(str(tmp_path)) as c:
        config = ClientConfig(namesrv_addr=c.namesrv, rebalance_interval=1.0, poll_name_server_interval=1.0)
        async with Producer("PTraceJava", config=config, enable_msg_trace=True) as p:
            sent = await p.send(make_message("TTraceJava", b"traced", tags="TagT", keys="trace-java"))
        consumer = PushConsumer("CTraceJava", lambda msgs, ctx: seen.extend(m.uniq_key for m in msgs),
                                config=config, enable_msg_trace=True,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        consumer.subscribe("TTraceJava", "*")
        async with consumer:
            with trio.fail_after(30):
                while sent.msg_id not in seen:
                    await trio.sleep(0.05)
        out = await trio.run_process(["bash", str(java_ref / "bin" / "mqadmin.sh"), "queryMsgTraceById", "-n",
                                      c.namesrv, "-i", sent.msg_id or ""], capture_stdout=True, capture_stderr=True)
    text = out.stdout.decode()
    assert re.search(r"^Pub\s+PTraceJava\s+\S+\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+\d+ms\s+success", text, re.M), text
    assert re.search(r"^Sub\s+CTraceJava\s+\S+\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+\d+ms\s+success", text, re.M), text



def test_every_console_page_in_chromium_on_java_servers(java_ref: Path, tmp_path: Path) -> None:
    """rocketpy.console.testing's walks, which tests/test_console_browser.py runs on our servers, on the Java
    NameServer and broker: every page and its changes (kinds, order conf, broker status and config, by-time search,
    reset by time, group config, skip, DLQ list and export), then with a Python consumer online (its queues, its
    running info, a dead letter resent to it), through the admin protocol only."""
    import os
    import shutil
    from contextlib import asynccontextmanager

    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright (pip install playwright) is not installed")
    chromium = os.environ.get("ROCKETPY_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("no chromium on this machine (apt-get install chromium)")
    from rocketpy.console.app import ConsoleSettings
    from rocketpy.console.server import run_console
    from rocketpy.console.testing import fill_scenario, hosted, walk_pages, walk_with_a_consumer

    @asynccontextmanager
    async def java_console() -> Any:
        async with java_namesrv(java_ref, free_broker_port(), tmp_path) as namesrv:
            async with java_broker(java_ref, free_broker_port(), namesrv, tmp_path / "java-store",
                                   {"autoCreateTopicEnable": "true"}):
                async with Admin(namesrv) as admin:  # the first runtime sample (see scenario above)
                    data = ConsoleData(admin)
                    with trio.fail_after(60):
                        while not (rows := await data.brokers()) or any(b.error for b in rows):
                            await trio.sleep(0.2)
                async with trio.open_nursery() as nursery:
                    url = await nursery.start(run_console, ConsoleSettings(namesrv=namesrv), "127.0.0.1:0")
                    yield namesrv, url
                    nursery.cancel_scope.cancel()

    with hosted(java_console) as ((namesrv, url), portal), sync_api.sync_playwright() as p:
        sc = portal.run(fill_scenario, namesrv)
        browser = p.chromium.launch(executable_path=chromium, headless=True,
                                    args=["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"])
        try:
            page = browser.new_page()
            page.set_default_timeout(15_000)
            walk_pages(page, url, sc)
            walk_with_a_consumer(page, url, sc, namesrv, portal)
        finally:
            browser.close()
