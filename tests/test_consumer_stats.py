"""The push consumer's statusTable (ConsumerStatsManager): what GET_CONSUMER_RUNNING_INFO tells mqadmin
consumerStatus and the exporter's rocketmq_client_* metrics."""

from __future__ import annotations

import pytest

from rocketpy.client import ClientConfig, ConsumeFromWhere, Producer, PushConsumer, make_message
from rocketpy.client.consumer_stats import ConsumerStats
from rocketpy.client.push_consumer import ConsumeStatus as Reply
from rocketpy.testing import wait_until


def test_rates_over_the_minute_and_failures_over_the_hour():
    now = [1000.0]
    stats = ConsumerStats(clock=lambda: now[0])
    for _ in range(6):  # a minute: every 10 s a pull of 5 in 20 ms, 4 consumed and 1 failed in 8 ms
        stats.pulled("T", 5, 20)
        stats.consumed("T", 4, 1, 8)
        now[0] += 10
    st = stats.status("T")
    assert st.pull_tps == pytest.approx(30 / 60) and st.pull_rt == 20.0
    assert st.consume_ok_tps == pytest.approx(24 / 60) and st.consume_failed_tps == pytest.approx(6 / 60)
    assert st.consume_rt == 8.0
    assert st.consume_failed_msgs == 0  # the hour's samples come every 10 minutes: Java says 0 until the second
    now[0] += 600  # ten idle minutes: the minute's rates fall to 0, the hour has the failures and the times
    st = stats.status("T")
    assert st.pull_tps == 0.0 and st.consume_ok_tps == 0.0 and st.consume_failed_msgs == 6
    assert st.consume_rt == 8.0  # Java: the hour's average when the minute has none
    assert stats.status("unknown").pull_tps == 0.0
    stats.forget({"other"})
    assert stats.status("T").consume_failed_msgs == 0


@pytest.mark.timeout(60)
async def test_running_info_has_a_status_per_subscribed_topic():
    from rocketpy.client.admin import Admin
    from rocketpy.console.testing import console_cluster

    failed_once: set[str] = set()
    seen: list[str] = []

    def listener(msgs, ctx):
        for m in msgs:
            if m.body == b"m0" and m.uniq_key not in failed_once:
                failed_once.add(m.uniq_key)
                return Reply.RECONSUME_LATER
        seen.extend(m.uniq_key for m in msgs)
        return Reply.CONSUME_SUCCESS

    async with console_cluster() as c, Admin(c.namesrv) as admin:
        config = ClientConfig(namesrv_addr=c.namesrv, rebalance_interval=1.0, poll_name_server_interval=1.0)
        async with Producer("PG_stats", namesrv=c.namesrv) as p:
            for i in range(10):
                await p.send(make_message("TStats", f"m{i}"))
        consumer = PushConsumer("CG_stats", listener, config=config,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        consumer.subscribe("TStats", "*")
        async with consumer:
            await wait_until(lambda: len(seen) >= 9, timeout=20, tick=0.05)
            due = consumer.stats.clock() + 15
            consumer.stats.clock = lambda: due  # the next 10-second sample is due (the minute has two), no other
            conn = await admin.consumer_connection("CG_stats")
            info = await admin.consumer_running_info("CG_stats", conn.connection_set[0].client_id)
            own = consumer.stats.status("TStats")  # from the same samples
    assert set(info.status_table) == {"TStats", "%RETRY%CG_stats"}
    st = info.status_table["TStats"]
    assert st.pull_tps > 0 and st.consume_ok_tps > 0 and st.consume_failed_tps > 0
    # every figure the consumer's own, the average pull time included
    for name in ("pull_rt", "pull_tps", "consume_rt", "consume_ok_tps", "consume_failed_tps", "consume_failed_msgs"):
        assert getattr(st, name) == pytest.approx(getattr(own, name)), name
