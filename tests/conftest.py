"""Test-wide settings: Hypothesis judged by what it finds, not by how fast a busy 2-core CI machine runs it."""

from collections.abc import Iterator

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, settings

from rocketpy.testing import clock_following

settings.register_profile(
    "rocketpy", deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.load_profile("rocketpy")

#: interop suites that start JVMs (Spark): marked ``slow`` so a quick local run can leave them out
#: (``pytest -m "not slow"``); CI runs everything
SLOW_FILES = {"test_spark_jobs.py", "test_spark_sources.py"}


def pytest_collection_modifyitems(config, items):  # type: ignore[no-untyped-def]
    for item in items:
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)


#: real seconds every task must have waited before a virtual clock jumps: long enough for a
#: loopback socket or a worker thread (a flush, a config write) to answer first on a busy machine
AUTOJUMP_THRESHOLD_S = 0.02


@pytest.fixture
def virtual_clock() -> Iterator[trio.testing.MockClock]:
    """The test runs on trio's MockClock, jumping ahead whenever everything waits, and rocketpy's
    clock (every broker, NameServer and client timestamp) follows it: delays, timeouts and
    "nothing happened" checks take virtual time, not the wall clock's."""
    clock = trio.testing.MockClock(autojump_threshold=AUTOJUMP_THRESHOLD_S)
    with clock_following(clock):  # set before trio.run: pytest-trio copies this context into the test
        yield clock
