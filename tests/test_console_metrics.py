"""/metrics: every rocketmq-exporter metric, with its names, labels and help texts, from the broker answers the
exporter reads (the catalogue is RMQMetricsCollector's)."""

from __future__ import annotations

from pathlib import Path

import pytest
from metrics_load import LIVE, STOPPED, TOPIC, http_get, loaded_cluster
from prometheus_client.parser import text_string_to_metric_families

from rocketpy.console.metrics import METRICS, RUNTIME_LABELS, machine_bytes, runtime_labels, runtime_values

GOLDEN = Path(__file__).parent / "data" / "mqadmin" / "24-brokerStatus.txt"


def _golden_table() -> dict[str, str]:
    table = {}
    for line in GOLDEN.read_text().splitlines()[2:]:
        key, _, value = line.partition(":")
        table[key.strip()] = value[1:] if value.startswith(" ") else value
    return table


def test_the_catalogue_is_the_exporters():
    assert len(METRICS) == 88
    assert METRICS["rocketmq_group_diff"] == ("GroupDiff", ("group", "topic", "countOfOnlineConsumers", "msgModel"))
    assert METRICS["rocketmq_topic_dlq_offset"] == ("TopicRetryOffset", ("cluster", "broker", "group"))
    assert METRICS["rocketmq_client_consumer_pull_rt"] == ("consumerClientPullRT",
                                                           ("clientAddr", "clientId", "group", "topic"))
    assert METRICS["rocketmq_brokeruntime_pmdt_10stomore"][0] == "PutMessageDistributeTimeMap10toMore"
    assert METRICS["rocketmq_brokeruntime_pull_threadpoolqueue_size"][0] == "brokerRuntimePullThreadPoolQueueSizeF"
    assert sum(1 for _, labels in METRICS.values() if labels == RUNTIME_LABELS) == 63


def test_java_brokers_runtime_table_as_the_exporter_reads_it():
    """The Java 4.9.8 broker's brokerStatus (golden 24), as BrokerRuntimeStats parses it."""
    table = _golden_table()
    values = runtime_values(table)
    assert values["rocketmq_brokeruntime_put_tps10"] == 0.0
    assert values["rocketmq_brokeruntime_put_tps60"] == pytest.approx(0.49963360202518153)
    assert values["rocketmq_brokeruntime_put_tps600"] == 0.0  # not sampled yet: "" at the end, read as 0
    assert values["rocketmq_brokeruntime_gettotal_tps600"] == 0.0
    assert values["rocketmq_brokeruntime_commitlogdir_capacity_total"] == 252.0 * 1024**3
    assert values["rocketmq_brokeruntime_commitlogdir_capacity_free"] == pytest.approx(76.6 * 1024**3)
    assert values["rocketmq_brokeruntime_pmdt_0ms"] == 18 and values["rocketmq_brokeruntime_pmdt_0to10ms"] == 11
    assert values["rocketmq_brokeruntime_pmdt_10stomore"] == 0
    assert values["rocketmq_brokeruntime_put_latency_99"] == 5.0
    assert values["rocketmq_brokeruntime_remain_howmanydata_toflush"] == 0.0
    assert values["rocketmq_brokeruntime_commitlog_disk_ratio"] == 0.25
    assert values["rocketmq_brokeruntime_earliest_message_timestamp"] == -1
    assert len(values) == 63
    assert runtime_labels("DefaultCluster", "127.0.0.1:20911", table) == (
        "DefaultCluster", "127.0.0.1:20911", "", "V4_9_8", "1795464684545", "409")
    # before the broker's first minute: no distribution (the exporter then has none of the pmdt metrics)
    assert not any("pmdt" in k for k in runtime_values({**table, "putMessageDistributeTime": "null"}))
    assert runtime_values({**table, "remainHowManyDataToFlush": "3.1 KiB"})[
        "rocketmq_brokeruntime_remain_howmanydata_toflush"] == pytest.approx(3.1 * 1024)
    assert runtime_values({k: v for k, v in table.items() if k != "putLatency99"})[
        "rocketmq_brokeruntime_put_latency_99"] == -1.0  # the exporter's default for older brokers


def test_machine_readable_byte_counts():
    assert [machine_bytes(t) for t in ("100 B", "1 KiB", "1.5 GiB", "2 TiB")] == [100, 1024, 1.5 * 1024**3, 2 * 1024**4]


@pytest.mark.timeout(120)
async def test_every_exporter_metric_has_samples_with_the_exporters_labels():
    async with loaded_cluster() as load:
        assert load.live is not None
        stats = load.live.stats
        due = stats.clock() + 15
        stats.clock = lambda: due  # the consumer's next 10-second sample is due (its minute has a rate), no other
        status, text = await http_get(load.cluster.url, "/metrics")
        ok_tps = stats.status(TOPIC).consume_ok_tps  # from the same samples
        client_id = load.live.client.client_id
    assert status == 200
    families = {f.name: f for f in text_string_to_metric_families(text)}
    for name, (help_, labels) in METRICS.items():
        family = families[name]
        assert family.documentation == help_ and family.type == "gauge", name
        assert family.samples, f"{name} has no samples"
        for sample in family.samples:
            assert tuple(sorted(sample.labels)) == tuple(sorted(labels)), (name, sample.labels)

    def value(name: str, **labels: str) -> float:
        found = [s.value for s in families[name].samples if all(s.labels.get(k) == v for k, v in labels.items())]
        assert len(found) == 1, (name, labels, families[name].samples)
        return found[0]

    # the stopped group: behind by what was sent since it stopped, and waiting since the first of those
    assert value("rocketmq_group_diff", group=STOPPED, topic=TOPIC, countOfOnlineConsumers="0", msgModel="1") > 0
    assert value("rocketmq_group_get_latency_by_storetime", group=STOPPED, topic=TOPIC) > 0
    assert value("rocketmq_consumer_offset", group=STOPPED, topic=TOPIC) >= 20
    assert value("rocketmq_group_count", group=STOPPED, caddr="", localaddr="") == 0
    # the live one: online, its failures sent back, one of them dead
    assert value("rocketmq_group_count", group=LIVE, localaddr=client_id) == 1
    assert value("rocketmq_send_back_nums", group=LIVE, topic=TOPIC) >= 2
    assert value("rocketmq_group_dlqdiff", group=LIVE, topic=f"%DLQ%{LIVE}") >= 1
    assert value("rocketmq_topic_dlq_offset", group=LIVE) >= 1
    # the live consumer's own consumeOKTPS, as GET_CONSUMER_RUNNING_INFO answers it
    assert ok_tps > 0
    assert value("rocketmq_client_consume_ok_msg_tps", group=LIVE, topic=TOPIC, clientId=client_id) == pytest.approx(
        ok_tps
    )
    assert value("rocketmq_producer_count", group="PG_load") == 1
    assert value("rocketmq_producer_offset", topic=TOPIC) >= 20
    assert value("rocketmq_producer_tps", topic=TOPIC) > 0  # the minute's sends (TOPIC_PUT_NUMS' minute sum)
    # the runtime gauges' labels: the exporter's des is the version's name, broker_version its number
    sample = families["rocketmq_brokeruntime_put_tps10"].samples[0]
    assert sample.labels["des"] == "V4_9_8" and sample.labels["broker_version"] == "409"
    assert sample.labels["brokerHost"] == "" and sample.labels["brokerIP"] == load.cluster.broker.broker_addr
    assert sum(s.value for n in METRICS if "pmdt" in n for s in families[n].samples) > 0
