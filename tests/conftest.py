"""Test-wide settings: Hypothesis judged by what it finds, not by how fast a busy 2-core CI machine runs it."""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "rocketpy", deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.load_profile("rocketpy")
