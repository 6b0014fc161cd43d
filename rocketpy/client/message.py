"""Building messages the way Java's Message constructors and MessageUtil do."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..codecs.codes import MessageConst, MixAll
from ..codecs.message import Message, MessageExt
from .errors import MQClientError

_TAGS = MessageConst.PROPERTY_TAGS
_KEYS = MessageConst.PROPERTY_KEYS
_WAIT = MessageConst.PROPERTY_WAIT_STORE_MSG_OK


def make_message(
    topic: str,
    body: bytes | bytearray | memoryview | str,
    *,
    tags: str | None = None,
    keys: str | Iterable[str] | None = None,
    properties: Mapping[str, str] | None = None,
    delay_level: int | None = None,
    flag: int = 0,
    wait_store_msg_ok: bool = True,
) -> Message:
    """A Message like ``new Message(topic, tags, keys, body)``: TAGS, KEYS and WAIT set, user properties added."""
    if not isinstance(topic, str) or not topic:
        raise TypeError(f"make_message: the topic must be a non-empty str, not {topic!r}")
    if type(body) is not bytes:  # plain bytes, the usual body, pass no further look
        if isinstance(body, str):
            body = body.encode("utf-8")
        elif isinstance(body, (bytearray, memoryview)):
            body = bytes(body)
        elif not isinstance(body, bytes):
            raise TypeError(f"make_message: the body must be bytes or str (str is sent as UTF-8), not "
                            f"{type(body).__name__}; serialise it first, e.g. json.dumps(value)")
    msg = Message(topic, body, flag)  # positional: the keyword call costs twice as much
    props = msg.properties
    if tags:
        props[_TAGS] = tags
    if keys:
        props[_KEYS] = keys if isinstance(keys, str) else MessageConst.KEY_SEPARATOR.join(keys)
    props[_WAIT] = "true" if wait_store_msg_ok else "false"
    if properties:
        for name, value in properties.items():
            put_user_property(msg, name, value)
    if delay_level:
        props[MessageConst.PROPERTY_DELAY_TIME_LEVEL] = str(delay_level)
    return msg


def put_user_property(msg: Message, name: str, value: str) -> None:
    """Message.putUserProperty: system property names are refused."""
    if name in MessageConst.STRING_HASH_SET:
        raise MQClientError(f"The Property<{name}> is used by system, input another please")
    if not name or value is None or value == "":
        raise MQClientError("The name or value of property can not be null or blank string!")
    msg.properties[name] = value


def user_properties(msg: Message) -> dict[str, str]:
    return {k: v for k, v in msg.properties.items() if k not in MessageConst.STRING_HASH_SET}


def create_reply_message(request: MessageExt | Message, body: bytes | str) -> Message:
    """MessageUtil.createReplyMessage: a reply to a request message, routed back by the broker."""
    if isinstance(body, str):
        body = body.encode("utf-8")
    props = request.properties
    cluster = props.get(MessageConst.PROPERTY_CLUSTER)
    if not cluster:
        raise MQClientError("create reply message fail, requestMessage error, "
                            f"property[{MessageConst.PROPERTY_CLUSTER}] is null.")
    reply = Message(topic=MixAll.get_reply_topic(cluster), body=body)
    reply.properties[MessageConst.PROPERTY_MESSAGE_TYPE] = MixAll.REPLY_MESSAGE_FLAG
    for key in (MessageConst.PROPERTY_CORRELATION_ID, MessageConst.PROPERTY_MESSAGE_REPLY_TO_CLIENT,
                MessageConst.PROPERTY_MESSAGE_TTL):
        if props.get(key) is not None:
            reply.properties[key] = props[key]
    return reply
