"""The interop suites say why each test skips (README's test section lists what each reason asks for).

Tests that find a third-party client missing in their body skip inside trio; pytest-trio 0.8 then skipped them
again without a message, and ``-rs`` showed twelve bare "Skipped" lines a newcomer could do nothing with.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.timeout(180)
def test_a_client_missing_in_a_test_body_is_named_in_the_skip_reason(tmp_path: Path) -> None:
    env = {**os.environ, "COMPAT_ENVS_DIR": str(tmp_path / "no-envs"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:xdist",
         "compat_tests/test_broker_compat.py", "-k", "cross_client or cpp_oneway_send"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=170)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    skips = [line for line in proc.stdout.splitlines() if line.startswith("SKIPPED")]
    assert sum(int(line.split("[", 1)[1].split("]", 1)[0]) for line in skips) == 7, proc.stdout
    for line in skips:
        assert "test_broker_compat.py" in line and ("client env" in line or "ali-ons" in line), line
