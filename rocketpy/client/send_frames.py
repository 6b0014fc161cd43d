"""A producer's SEND_MESSAGE_V2 frames from cached pieces.

One producer's sends differ in a few header fields only (queue, timestamp, properties...). Building each
through the typed header (two header objects, the fields' formatting, java.util.HashMap ordering, a JSON
document) costs about ten times what splicing those fields into cached pieces costs: the key order is
computed once per set of present keys (by the typed header itself), the group's and topic's JSON once,
and the opaque and the oneway flag go in when the frame is written. The frame is byte for byte the one
:meth:`PreparedSend.command` (the typed header's :class:`RemotingCommand`) encodes to; the tests hold
the two against each other for generated messages, JSON and ROCKETMQ header types both. Where the
accelerated build is there, a JSON frame is made in one compiled call (``_speedups.send_frame``), which
leaves anything unusual to :meth:`PreparedSend.frame_py`, its reference.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ..accel import compiled
from ..codecs import RemotingCommand
from ..codecs.codes import LanguageCode, MQVersion, SerializeType
from ..codecs.command import ONEWAY_FLAG
from ..codecs.frame import FRAME_PREFIX_UNIT, encode_rocketmq_header, frame_parts
from ..codecs.headers import SendMessageRequestHeaderV2

#: the stdlib's JSON string (quotes included), what JSONEncoder(ensure_ascii=False) writes
_json_string = json.encoder.encode_basestring
#: what the stdlib writes unlike fastjson (lower-case hex escapes; DEL, C1 controls and U+2028/9 left raw),
#: the test RemotingCommand's encoder applies too: a header holding one is encoded the reference way
_UNLIKE_FASTJSON = re.compile("\\\\u00[01][a-f]|[\x7f-\xa0\u2028\u2029]")
#: cached JSON strings (topics, broker names) kept at most
_CACHE_MAX = 4096


def _written_alike(text: str) -> bool:
    """Whether the JSON string ``text`` is what fastjson writes too (_UNLIKE_FASTJSON finds nothing in it).

    A look that costs a fifth of the regex's first: plain ASCII without DEL, whose only ``\\u00`` escapes are
    the properties' separators (``\\u0001``, ``\\u0002``), has nothing for it to find (its lower-case
    escapes are ``\\u000b``, ``\\u001a``... and removing the separators' escapes cannot take one apart)."""
    if text.isascii() and "\x7f" not in text and "\\u00" not in text.replace("\\u0001", "").replace("\\u0002", ""):
        return True
    return _UNLIKE_FASTJSON.search(text) is None


def _key_order(max_reconsume: bool, broker_name: bool) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(JSON order, ROCKETMQ order) of the extFields keys present: asked of the typed header itself."""
    sample = SendMessageRequestHeaderV2(
        producer_group="g", topic="t", default_topic="d", default_topic_queue_nums=0, queue_id=0, sys_flag=0,
        born_timestamp=0, flag=0, properties="", reconsume_times=0, unit_mode=False,
        max_reconsume_times=0 if max_reconsume else None, batch=False, broker_name="b" if broker_name else None)
    return tuple(sample.to_ext_fields()), tuple(sample.to_ext_fields(fast_order=True))


_ORDERS = {(m, b): _key_order(m, b) for m in (False, True) for b in (False, True)}


@dataclass(slots=True)
class SendFields:
    """The per-message fields of a send's header (the rest are the producer's)."""

    topic: str
    queue_id: int
    sys_flag: int
    born_timestamp: int
    flag: int
    properties: str
    reconsume_times: int = 0
    max_reconsume_times: int | None = None
    batch: bool = False
    broker_name: str | None = None


class SendFrames:
    """The frame maker of one producer group: ``prepare(code, fields, body)`` gives a PreparedSend."""

    __slots__ = ("group", "default_topic", "default_topic_queue_nums", "serialize_type", "_rocketmq", "_strings",
                 "_templates")

    def __init__(self, group: str, default_topic: str, default_topic_queue_nums: int,
                 serialize_type: SerializeType = SerializeType.JSON) -> None:
        self.group = group
        self.default_topic = default_topic
        self.default_topic_queue_nums = default_topic_queue_nums
        self.serialize_type = serialize_type
        self._rocketmq = serialize_type == SerializeType.ROCKETMQ  # (an IntEnum's == costs a call per send)
        self._strings: dict[str, str | None] = {}
        #: (code, topic, broker name, max reconsume times given) -> the JSON header's template, or None
        self._templates: dict[tuple[int, str, str | None, bool], Template | None] = {}

    def _json(self, text: str) -> str | None:
        """The JSON string of a header value that recurs (cached), None where the stdlib and fastjson differ."""
        cached = self._strings.get(text, "")
        if cached != "":
            return cached
        value: str | None = _json_string(text)
        if _UNLIKE_FASTJSON.search(value):  # type: ignore[arg-type]
            value = None
        if len(self._strings) >= _CACHE_MAX:
            self._strings.clear()
        self._strings[text] = value
        return value

    def header(self, fields: SendFields) -> SendMessageRequestHeaderV2:
        """The typed header these fields make (the reference)."""
        return SendMessageRequestHeaderV2(
            producer_group=self.group, topic=fields.topic, default_topic=self.default_topic,
            default_topic_queue_nums=self.default_topic_queue_nums, queue_id=fields.queue_id,
            sys_flag=fields.sys_flag, born_timestamp=fields.born_timestamp, flag=fields.flag,
            properties=fields.properties, reconsume_times=fields.reconsume_times, unit_mode=False,
            max_reconsume_times=fields.max_reconsume_times, batch=fields.batch, broker_name=fields.broker_name)

    def _template(self, code: int, topic: str, broker_name: str | None, max_reconsume: bool) -> Template | None:
        """The JSON header up to the flag with %-placeholders for the per-message fields (in declared order),
        and its literal parts around them (the compiled frame's pieces): None when the key order or a value's
        JSON does not allow one."""
        json_order = _ORDERS[max_reconsume, broker_name is not None][0]
        if [k for k in json_order if k in _DYNAMIC] != [k for k in _DYNAMIC if k in json_order]:
            return None
        fixed = {"a": self._json(self.group), "b": self._json(topic), "c": self._json(self.default_topic),
                 "d": f'"{self.default_topic_queue_nums}"', "k": '"false"',
                 "n": self._json(broker_name) if broker_name is not None else ""}
        if None in fixed.values():
            return None
        head = '{"code":' + str(code) + ',"extFields":{'
        pieces: list[bytes] = []
        literal = head
        parts = []
        for n, k in enumerate(json_order):
            comma = "," if n else ""
            if k in _DYNAMIC:
                quote = '"' if _DYNAMIC[k].startswith('"') else ""
                pieces.append((literal + f'{comma}"{k}":{quote}').encode())
                literal = quote
                parts.append(f'"{k}":{_DYNAMIC[k]}')
            else:
                literal += f'{comma}"{k}":{fixed[k]}'
                parts.append(f'"{k}":' + fixed[k].replace("%", "%%"))  # type: ignore[union-attr]
        pieces.append((literal + '},"flag":').encode())
        return (head + ",".join(parts) + '},"flag":').encode(), tuple(pieces)

    def prepare(self, code: int, fields: SendFields, body: bytes) -> PreparedSend:
        f = fields
        if self._rocketmq:
            fast_order = _ORDERS[f.max_reconsume_times is not None, f.broker_name is not None][1]
            ext = self.header(f).to_ext_fields(fast_order=True)
            return PreparedSend(self, code, f, body, None, {k: ext[k] for k in fast_order})
        key = (code, f.topic, f.broker_name, f.max_reconsume_times is not None)
        templates = self._templates
        template = templates.get(key, _NO_TEMPLATE)
        if template is _NO_TEMPLATE:
            if len(templates) >= _CACHE_MAX:
                templates.clear()
            template = templates[key] = self._template(*key)
        return PreparedSend(self, code, f, body, template, None)


#: (the JSON header's %-template up to the flag, its literal parts around the per-message values)
Template = tuple[bytes, tuple[bytes, ...]]
_NO_TEMPLATE: Template = (b"", ())
#: the compiled frame maker (rocketpy._speedups.send_frame), None without the accelerated build
_send_frame = compiled("send_frame")
#: the per-message extFields of a send and their placeholders in a template, in declared order
_DYNAMIC = {"e": '"%d"', "f": '"%d"', "g": '"%d"', "h": '"%d"', "i": "%s", "j": '"%d"', "l": '"%d"', "m": "%s"}
_PREFIX = FRAME_PREFIX_UNIT.pack
_MIDDLE = b',"language":"JAVA","opaque":'
_TAIL = b',"serializeTypeCurrentRPC":"JSON","version":' + str(int(MQVersion.V4_9_8)).encode() + b"}"


class PreparedSend:
    """One send's request, ready for any opaque (rocketpy.remoting's PreparedRequest)."""

    __slots__ = ("frames", "code", "fields", "body", "_template", "_ext")

    def __init__(self, frames: SendFrames, code: int, fields: SendFields, body: bytes, template: Template | None,
                 ext: dict[str, str] | None) -> None:
        self.frames = frames
        self.code = code
        self.fields = fields
        self.body = body
        self._template = template
        self._ext = ext

    def command(self) -> RemotingCommand:
        """The reference: the request the typed header makes."""
        return RemotingCommand.request(self.code, self.frames.header(self.fields), self.body,
                                       serialize_type=self.frames.serialize_type)

    def frame(self, opaque: int, oneway: bool = False) -> bytes:
        flag = ONEWAY_FLAG if oneway else 0
        template = self._template
        if template is not None and _send_frame is not None:
            f = self.fields
            try:
                frame: bytes | None = _send_frame(template[1], f.queue_id, f.sys_flag, f.born_timestamp, f.flag,
                                                  f.properties, f.reconsume_times, f.max_reconsume_times, f.batch,
                                                  flag, opaque, _MIDDLE, _TAIL, self.body)
            except (OverflowError, TypeError):  # a value beyond 64 bits, or of another type: the reference's
                frame = None
            if frame is not None:
                return frame
        return self.frame_py(opaque, flag)

    def frame_py(self, opaque: int, flag: int) -> bytes:
        """The reference of the compiled frame (and the frame of what it leaves to the reference)."""
        if self._ext is not None:
            header = encode_rocketmq_header(self.code, int(LanguageCode.JAVA), int(MQVersion.V4_9_8), opaque, flag,
                                            None, self._ext)
            return b"".join(frame_parts(SerializeType.ROCKETMQ, header, self.body))
        head = None
        if self._template is not None:
            f = self.fields
            props = _json_string(f.properties)
            if _written_alike(props):
                batch = b'"true"' if f.batch else b'"false"'
                if f.max_reconsume_times is None:
                    head = self._template[0] % (f.queue_id, f.sys_flag, f.born_timestamp, f.flag, props.encode(),
                                                f.reconsume_times, batch)
                else:
                    head = self._template[0] % (f.queue_id, f.sys_flag, f.born_timestamp, f.flag, props.encode(),
                                                f.reconsume_times, f.max_reconsume_times, batch)
        if head is None:  # a value only fastjson's writer gets right
            cmd = self.command()
            cmd.opaque = opaque
            cmd.flag |= flag
            return b"".join(cmd.encode_parts())
        header = b"%s%d%s%d%s" % (head, flag, _MIDDLE, opaque, _TAIL)
        n, body = len(header), self.body
        if n > 0xFFFFFF:
            return b"".join(frame_parts(SerializeType.JSON, header, body))  # which refuses it
        return b"".join((_PREFIX(4 + n + len(body), n), header, body))  # frame_parts' bytes, JSON's type 0
