"""Debian's Prometheus scraping the console of a cluster under load: every rocketmq-exporter metric has series
with the exporter's labels, and a stopped consumer's rocketmq_group_diff grows (Prometheus' HTTP API)."""

from __future__ import annotations

import json
import shutil
import subprocess
from urllib.parse import urlencode

import pytest
import trio
from metrics_load import STOPPED, TOPIC, http_get, loaded_cluster

from rocketpy.console.metrics import METRICS
from rocketpy.testing import free_port, wait_until

PROMETHEUS = shutil.which("prometheus")
#: labels the exporter leaves empty (brokerHost always; an offline group's addresses): Prometheus drops them
EMPTY_OK = {"brokerHost", "caddr", "localaddr"}


async def _api(base: str, path: str, **params: str) -> object:
    status, body = await http_get(base, f"/api/v1/{path}?{urlencode(params)}", version="1.0")
    assert status == 200, body
    answer = json.loads(body)
    assert answer["status"] == "success", answer
    return answer["data"]


@pytest.mark.skipif(PROMETHEUS is None, reason="Debian's prometheus is not installed (apt-get install prometheus; "
                                                 ".ci/run installs it)")
@pytest.mark.timeout(120)
async def test_prometheus_scrapes_every_exporter_metric_and_the_growing_lag(tmp_path):
    async with loaded_cluster(metrics_max_age=0.5) as load:
        target = load.cluster.url.removeprefix("http://")
        (tmp_path / "prometheus.yml").write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            "scrape_configs:\n"
            "  - job_name: rocketmq\n"
            "    scrape_timeout: 1s\n"
            f"    static_configs: [{{targets: ['{target}']}}]\n")
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        with open(tmp_path / "prometheus.log", "wb") as out:
            process = await trio.lowlevel.open_process(
                [PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}", f"--storage.tsdb.path={tmp_path / 'data'}",
                 f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                stdout=out, stderr=subprocess.STDOUT)
        try:

            async def ready() -> bool:
                try:
                    return (await http_get(base, "/-/ready", version="1.0"))[0] == 200
                except OSError:
                    return False

            await wait_until(ready, timeout=30, tick=0.2)
            wanted = set(METRICS)
            series: list[dict[str, str]] = []

            async def all_scraped() -> bool:
                nonlocal series
                series = await _api(base, "series", **{"match[]": '{__name__=~"rocketmq_.*"}'})  # type: ignore
                return wanted <= {s["__name__"] for s in series}

            await wait_until(all_scraped, timeout=30, tick=0.5)
            for s in series:
                labels = set(s) - {"__name__", "job", "instance"}
                exporter = set(METRICS[s["__name__"]][1])
                assert labels <= exporter and exporter - labels <= EMPTY_OK, (s, exporter)

            query = f'rocketmq_group_diff{{group="{STOPPED}",topic="{TOPIC}",msgModel="1",countOfOnlineConsumers="0"}}'
            first: list[float] = []

            async def grown() -> bool:
                result = await _api(base, "query", query=query)
                values = [float(r["value"][1]) for r in result["result"]]  # type: ignore[index]
                if not values:
                    return False
                if not first:
                    first.append(values[0])
                return values[0] > first[0]

            await wait_until(grown, timeout=30, tick=0.5)
            assert first[0] > 0
        finally:
            process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()
