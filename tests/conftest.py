"""Test-wide settings: Hypothesis judged by what it finds, not by how fast a busy 2-core CI machine runs it."""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "rocketpy", deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.load_profile("rocketpy")

#: interop suites that start JVMs (Spark): marked ``slow`` so a quick local run can leave them out
#: (``pytest -m "not slow"``); CI runs everything
SLOW_FILES = {"test_spark_jobs.py", "test_spark_sources.py"}


def pytest_collection_modifyitems(config, items):  # type: ignore[no-untyped-def]
    import pytest

    for item in items:
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
