"""deploy/prometheus: the scrape config, the alert rules and their unit tests (promtool), and the Grafana
dashboard, whose every panel and variable queries only metrics the console's /metrics serves."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from metrics_load import http_get

from rocketpy.console.testing import console_cluster

DEPLOY = Path(__file__).parent.parent / "deploy" / "prometheus"
METRIC = re.compile(r"\brocketmq_[a-z0-9_]+\b")
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (Debian: apt-get install "
                                                                "prometheus; .ci/run installs it)")


def dashboard_queries() -> list[str]:
    """Every panel target's expression (rows' panels too) and every query variable's query."""
    dash = json.loads((DEPLOY / "grafana-rocketmq.json").read_text())
    out: list[str] = []

    def walk(panels: list[dict[str, Any]]) -> None:
        for panel in panels:
            out.extend(t["expr"] for t in panel.get("targets", []))
            walk(panel.get("panels", []))

    walk(dash["panels"])
    for var in dash["templating"]["list"]:
        if var["type"] == "query":
            out.append(var["query"]["query"] if isinstance(var["query"], dict) else var["query"])
    return out


def rule_expressions() -> list[str]:
    rules = yaml.safe_load((DEPLOY / "rocketmq.rules.yml").read_text())
    return [r["expr"] for g in rules["groups"] for r in g["rules"]]


async def test_dashboard_and_rules_use_only_metrics_the_console_serves():
    async with console_cluster() as c:
        status, text = await http_get(c.url, "/metrics")
    assert status == 200
    served = set(re.findall(r"^# TYPE (\S+) gauge$", text, re.M))
    assert len(served) == 88
    queries = dashboard_queries()
    assert len(queries) > 30
    for expr in queries + rule_expressions():
        used = set(METRIC.findall(expr))
        assert used, expr
        assert used <= served, (expr, used - served)
    # each metric family of the exporter is on some panel
    on_panels = {name for expr in queries for name in METRIC.findall(expr)}
    assert len(on_panels) >= 60, sorted(served - on_panels)


@needs_promtool
def test_dashboard_queries_are_valid_promql(tmp_path):
    """Each panel's query as a recording rule: promtool parses them (the variables as match-all)."""
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:panel_{i}", "expr": re.sub(r"\$\{?\w+\}?", ".*", expr)}
        for i, expr in enumerate(e for e in dashboard_queries() if not e.startswith("label_values"))]}]}
    path = tmp_path / "dashboard.rules.yml"
    path.write_text(yaml.safe_dump(rules))
    run = subprocess.run([PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr


@needs_promtool
def test_rules_config_and_rule_unit_tests_pass_promtool():
    for args in (["check", "rules", "rocketmq.rules.yml"], ["check", "config", "prometheus.yml"],
                 ["test", "rules", "rocketmq.rules.test.yml"]):
        run = subprocess.run([PROMTOOL, *args], cwd=DEPLOY, capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, (args, run.stdout + run.stderr)


def test_the_rules_cover_the_exporters_example_rules():
    rules = yaml.safe_load((DEPLOY / "rocketmq.rules.yml").read_text())
    names = {r["alert"] for g in rules["groups"] for r in g["rules"]}
    assert {"RocketMQClusterProduceHigh", "RocketMQClusterProduceLow", "RocketMQClusterConsumeHigh",
            "RocketMQClusterConsumeLow", "ConsumerFallingBehind", "GroupGetLatencyByStoretime"} <= names
    tests = yaml.safe_load((DEPLOY / "rocketmq.rules.test.yml").read_text())
    tested = {t["alertname"] for case in tests["tests"] for t in case.get("alert_rule_test", [])}
    assert names <= tested, names - tested
