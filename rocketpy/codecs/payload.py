"""Which typed body a RemotingCommand carries, by request code and direction."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .codes import MessageSysFlag, RequestCode, ResponseCode
from .errors import CodecError

if TYPE_CHECKING:
    from .command import RemotingCommand
    from .headers.send import ReplyMessageRequestHeader, SendMessageRequestHeader
    from .message import Message

#: responses whose body is message records laid back to back (MessageDecoder format)
MESSAGE_RECORD_RESPONSES = frozenset(
    {RequestCode.PULL_MESSAGE, RequestCode.QUERY_MESSAGE, RequestCode.VIEW_MESSAGE_BY_ID}
)
#: broker-to-client requests carrying one message record
MESSAGE_RECORD_REQUESTS = frozenset({RequestCode.CHECK_TRANSACTION_STATE, RequestCode.CONSUME_MESSAGE_DIRECTLY})
#: requests whose body is the raw message body
RAW_MESSAGE_BODY_REQUESTS = frozenset(
    {
        RequestCode.SEND_MESSAGE,
        RequestCode.SEND_MESSAGE_V2,
        RequestCode.SEND_REPLY_MESSAGE,
        RequestCode.SEND_REPLY_MESSAGE_V2,
        RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT,
    }
)


def decode_body(cmd: RemotingCommand) -> Any:
    """The typed body of ``cmd``: a JsonBody, a list of messages, or the raw bytes.

    Responses need ``cmd.request_code`` (set when pairing); error responses and
    unknown codes give the raw bytes (None when there is no body).
    """
    from . import batch, dledger, record
    from .bodies import registry

    body = cmd.body
    if not body:
        return None
    code = cmd.request_code if cmd.is_response else cmd.code
    if code is not None and dledger.is_dledger_code(code):
        # DLedger's RPC: every reply's header says 200, the body says how it went
        if not cmd.is_response:
            return dledger.decode_request_body(code, body)
        return dledger.decode_reply_body(code, body) if cmd.code == dledger.REPLY_HEADER_CODE else body
    if cmd.is_response:
        if code is None or cmd.code != ResponseCode.SUCCESS:
            return body
        if code in MESSAGE_RECORD_RESPONSES:
            return record.decode_messages(body)
        cls = registry.RESPONSE_BODIES.get(code)
        return cls.decode(body) if cls is not None else body
    code = cmd.code
    if code in RAW_MESSAGE_BODY_REQUESTS:
        return body
    if code == RequestCode.SEND_BATCH_MESSAGE:
        topic = (cmd.ext_fields or {}).get("b") or (cmd.ext_fields or {}).get("topic") or ""
        return batch.decode_batch(body, topic)
    if code in MESSAGE_RECORD_REQUESTS:
        return record.decode_message(body)
    if code == RequestCode.REGISTER_BROKER:
        from .bodies.register import RegisterBrokerBody

        compressed = (cmd.ext_fields or {}).get("compressed", "false").lower() == "true"
        return RegisterBrokerBody.decode_body(body, compressed=compressed)
    cls = registry.REQUEST_BODIES.get(code)
    return cls.decode(body) if cls is not None else body


def send_header(cmd: RemotingCommand) -> SendMessageRequestHeader | ReplyMessageRequestHeader:
    """The typed header of a request in RAW_MESSAGE_BODY_REQUESTS, the one-letter V2 form turned
    long-named as the broker does; CodecError when it does not decode."""
    from .headers.send import ReplyMessageRequestHeader, SendMessageRequestHeader, SendMessageRequestHeaderV2

    if cmd.is_response or cmd.code not in RAW_MESSAGE_BODY_REQUESTS:
        raise CodecError(f"request code {cmd.code} does not carry a message body")
    header = cmd.header
    if isinstance(header, SendMessageRequestHeaderV2):
        return header.to_v1()
    if not isinstance(header, (SendMessageRequestHeader, ReplyMessageRequestHeader)):
        raise CodecError(f"request code {cmd.code} has no send header")  # the registry maps every code above
    return header


def sent_message(
    cmd: RemotingCommand,
    header: SendMessageRequestHeader | ReplyMessageRequestHeader | None = None,
    *,
    decompress: bool = False,
    max_size: int | None = None,
) -> Message:
    """The message a request in RAW_MESSAGE_BODY_REQUESTS carries: the body from the frame, topic,
    flag and properties from its typed header (``header``, or :func:`send_header` of ``cmd``).

    ``decompress`` inflates a body the header's sysFlag marks compressed (the application's
    payload; ``max_size`` bounds it); CodecError when the header or the body does not decode.
    """
    from .message import Message, decompress_body, string_to_properties

    if header is None:
        header = send_header(cmd)
    body = cmd.body or b""
    if decompress and body and (header.sys_flag or 0) & MessageSysFlag.COMPRESSED_FLAG:
        body = decompress_body(body, max_size=max_size)
    return Message(
        topic=header.topic or "",
        body=body,
        flag=header.flag or 0,
        properties=string_to_properties(header.properties),
    )
