"""Checks of a broker.conf's text before a broker starts on it (``rocketpy broker``/``serve``).

Java accepts almost anything and fails later, or silently reads a typo as ``false``; a
command line should say so at once, in one line: refuse what this broker cannot run
(a feature it does not implement, a size that would make every send fail, an unknown
enum value, with the valid ones) and warn about what Java would read differently
from what the file seems to say. Kept apart from the .properties reader on purpose.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..codecs.codes import BrokerRole, FlushDiskType
from ..javacompat.properties import ConfigError
from ..remoting.tls import TLS_KEYS
from .java_defaults import JAVA_PROPERTIES

__all__ = ["IGNORED", "UNIMPLEMENTED", "check_given"]

#: key -> (the value that asks for it, what it is): Java features this broker does not have.
#: Starting anyway would look like it works and then behave differently, so they are refused.
UNIMPLEMENTED: dict[str, tuple[str, str]] = {
    "useTLS": ("true", "TLS on the remoting port"),
}

#: the same for features whose absence changes no message or offset (only speed or disk use): warned
IGNORED: dict[str, tuple[str, str]] = {
    "transientStorePoolEnable": ("true", "the transient (off-heap) store pool"),
    "enableConsumeQueueExt": ("true", "the ConsumeQueue extension (bitmap filter data)"),
}

_ENUMS: dict[str, tuple[str, ...]] = {
    "brokerRole": tuple(m.value for m in BrokerRole),
    "flushDiskType": tuple(m.value for m in FlushDiskType),
}

#: sizes a store cannot work with when zero or negative
_POSITIVE = ("mappedFileSizeCommitLog", "mappedFileSizeConsumeQueue", "maxHashSlotNum", "maxIndexNum",
             "maxMessageSize")

_BOOLEAN_KEYS = frozenset(k for k, v in JAVA_PROPERTIES if v in ("true", "false")) | {"vipChannelEnable"}


def check_given(given: Mapping[str, str], warn: Callable[[str], None] | None = None) -> list[str]:
    """The warnings (one line each) for ``given``; ConfigError for a setting this broker refuses. The warnings
    are found first and each handed to ``warn`` before a refusal is raised, so a command line prints them
    before its one fatal line (they came after it, from the log thread, on the same line)."""
    values = {k: v.strip() for k, v in given.items()}
    warnings = _warnings(values)
    for warning in warnings:
        if warn is not None:
            warn(warning)
    _refuse(values)
    return warnings


def _warnings(values: Mapping[str, str]) -> list[str]:
    from .config import ROCKETPY_KEYS
    from .java_defaults import KNOWN_KEYS

    warnings = [f"unknown broker config key {key!r} ignored" for key in sorted(values)
                if key not in KNOWN_KEYS and key not in ROCKETPY_KEYS and key not in TLS_KEYS]
    for key, (value, what) in IGNORED.items():
        if values.get(key, "").lower() == value:
            warnings.append(f"{key}={values[key]} ignored: rocketpy's broker does not implement {what}")
    for key in sorted(values.keys() & _BOOLEAN_KEYS):
        if values[key].lower() not in ("true", "false"):
            warnings.append(f"{key}={values[key]} is not true or false: read as false "
                            f"(as Java's Boolean.parseBoolean does)")
    return warnings


def _refuse(values: Mapping[str, str]) -> None:
    for key, (value, what) in UNIMPLEMENTED.items():
        if values.get(key, "").lower() == value:
            raise ConfigError(f"{key}={values[key]} asks for {what}, which rocketpy's broker does not implement; "
                              f"remove the line or set {key}=false")
    for key, allowed in _ENUMS.items():
        if key in values and values[key] not in allowed:
            raise ConfigError(f"{key}={values[key]!r} is not one of {', '.join(allowed)}")
    for key in _POSITIVE:
        raw = values.get(key)
        if raw is None:
            continue
        try:
            number = int(raw)
        except ValueError:
            continue  # the typed reader reports a non-number
        if number <= 0:
            raise ConfigError(f"{key}={raw} must be a positive number")
    for key in ("aclStrictAdmin", "aclStrictBatchSend", "aclStrictReads"):
        # Java would read a typo as false; these switches stay on for one, so say it at once
        if key in values and values[key].lower() not in ("true", "false"):
            raise ConfigError(f"{key}={values[key]!r} is not true or false")
    if "haAllowedAddresses" in values:
        from ..allowlist import AllowList

        try:
            AllowList.parse(values["haAllowedAddresses"], keywords=("slaves",))
        except ValueError as exc:
            raise ConfigError(f"haAllowedAddresses: {exc}") from None
    if values.get("messageStorePlugIn"):
        raise ConfigError(f"messageStorePlugIn={values['messageStorePlugIn']}: Java store plug-ins cannot load here")
