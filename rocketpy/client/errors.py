"""Client errors: what the caller sees when the cluster or the client says no."""

from __future__ import annotations

from ..codecs.codes import ResponseCode, response_code_name


class MQClientError(Exception):
    """A client-side failure (Java's MQClientException): bad arguments, no route, all retries failed."""

    def __init__(self, message: str, response_code: int = -1) -> None:
        super().__init__(message)
        self.response_code = response_code


class BadArgument(MQClientError):
    """A command-line value that cannot be used (a time in no known format, a missing target)."""


class MQBrokerError(MQClientError):
    """A broker or name server answered with an error code (Java's MQBrokerException)."""

    def __init__(self, response_code: int, remark: str | None, addr: str | None = None) -> None:
        self.remark = remark
        self.addr = addr
        name = response_code_name(response_code) if response_code in ResponseCode._value2member_map_ else ""
        where = f" BROKER: {addr}" if addr else ""
        super().__init__(f"CODE: {response_code} {name} DESC: {remark}{where}".strip(), response_code)


class RequestTimeoutError(MQClientError):
    """A request-reply call got no reply in time."""
