"""Building answers whose extFields come out in the order a Java broker writes them.

Java puts a response header's fields into the command's extFields HashMap (and the
send path adds MSG_REGION and TRACE_ON there too), so a JSON header lists them in
HashMap bucket order. With ROCKETMQ binary headers, a FastCodesHeader (send and pull
responses) writes its own fields first in declared order, then the HashMap entries.
"""

from __future__ import annotations

from ..codecs import RemotingCommand, ResponseCode, SerializeType
from ..codecs.command import RESPONSE_FLAG, merge_ext_fields

NOT_SET_REMARK = "not set any response code"


def respond(
    request: RemotingCommand,
    code: int = ResponseCode.SUCCESS,
    remark: str | None = None,
    *,
    header: dict[str, str] | None = None,
    extra: dict[str, str] | None = None,
    fast: bool = False,
    body: bytes | None = None,
) -> RemotingCommand:
    """A response to ``request``.

    ``header``: the typed response header's non-null fields in declared order, or None
    when Java builds the response without a header class (extFields stays null).
    ``extra``: fields Java adds with addExtField. ``fast``: the header is a FastCodesHeader.
    """
    ext = merge_ext_fields(header, extra, fast=fast and request.serialize_type == SerializeType.ROCKETMQ)
    return RemotingCommand(
        code=int(code),
        opaque=request.opaque,
        flag=RESPONSE_FLAG,
        remark=remark,
        ext_fields=ext,
        body=body,
        serialize_type=request.serialize_type,
        request_code=request.code,
    )


def error(request: RemotingCommand, code: int, remark: str, *, header: bool = False) -> RemotingCommand:
    """An error answer; ``header``: Java made it with a header class (extFields ``{}``)."""
    return respond(request, code, remark, header={} if header else None)
