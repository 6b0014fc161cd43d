"""``rocketpy health``: the probe orchestrators run (exit 0 healthy, 1 not)."""

from __future__ import annotations

import json

import pytest
from clusters import threaded_cluster

from rocketpy.cli import main
from rocketpy.testing import free_port


def test_health_probes(capsys: pytest.CaptureFixture[str]) -> None:
    with threaded_cluster() as c:
        assert main(["health", "-n", c.namesrv, "--ready"]) == 0
        assert capsys.readouterr().out == f"OK namesrv {c.namesrv} masters broker-a\n"
        assert main(["health", "-b", c.broker_addr, "--ready", "--json"]) == 0
        result = json.loads(capsys.readouterr().out)
        assert result["ok"] and result["version"] == "V4_9_8"
        # a broker that refuses writes is alive, not ready
        assert main(["admin", "updateBrokerConfig", "-n", c.namesrv, "-b", c.broker_addr, "-k", "brokerPermission",
                     "-v", "4"]) == 0
        capsys.readouterr()
        assert main(["health", "-b", c.broker_addr]) == 0
        assert main(["health", "-b", c.broker_addr, "--ready"]) == 1
        err = capsys.readouterr().err
        assert err == f"rocketpy health: broker {c.broker_addr}: the broker refuses writes (brokerPermission)\n"
    gone = f"127.0.0.1:{free_port()}"
    # the refusal comes at once; the timeout only has to outlast a busy machine: with 2 s, one CI run (four
    # workers on two cores) answered "no answer in time" instead; what held it was not found
    assert main(["health", "-n", gone, "--timeout", "10"]) == 1
    assert capsys.readouterr().err.startswith(f"rocketpy health: namesrv {gone}: connect to {gone} failed")
