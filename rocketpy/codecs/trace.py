"""Message trace records as the Java client's TraceDataEncoder writes them (sans-IO).

A trace message in RMQ_SYS_TRACE_TOPIC carries one or more records, each ended by
FIELD_SPLITOR (\\x02), with fields split by CONTENT_SPLITOR (\\x01). Its keys are the
traced message ids (and the message's own keys), so a trace is found with QUERY_MESSAGE.
"""

from __future__ import annotations

import dataclasses

CONTENT_SPLITOR = "\x01"
FIELD_SPLITOR = "\x02"
#: MessageType's ordinals
MESSAGE_TYPES = ("Normal_Msg", "Trans_Msg_Half", "Trans_msg_Commit", "Delay_Msg")


@dataclasses.dataclass
class TraceRecord:
    """One TraceContext with its single TraceBean, flattened."""

    trace_type: str  # Pub, SubBefore, SubAfter, EndTransaction
    msg_id: str
    timestamp: int = 0
    region_id: str = ""
    group: str = ""
    topic: str = ""
    tags: str = ""
    keys: str = ""
    store_host: str = ""
    client_host: str = ""
    body_length: int = 0
    cost_time: int = 0
    msg_type: str = ""
    offset_msg_id: str = ""
    success: bool = True
    request_id: str = ""
    retry_times: int = 0
    context_code: int = 0
    transaction_id: str = ""
    transaction_state: str = ""


def _bool(text: str) -> bool:
    return text.strip().lower() == "true"  # Boolean.parseBoolean


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return 0


def decode_trace_data(text: str) -> list[TraceRecord]:
    """Every record of one trace message body; unknown or short records are skipped."""
    out: list[TraceRecord] = []
    for context in text.split(FIELD_SPLITOR):
        f = context.split(CONTENT_SPLITOR)
        kind = f[0]
        try:
            if kind == "Pub":
                r = TraceRecord("Pub", f[5], _int(f[1]), f[2], f[3], topic=f[4], tags=f[6], keys=f[7],
                                store_host=f[8], body_length=_int(f[9]), cost_time=_int(f[10]))
                ordinal = _int(f[11])
                r.msg_type = MESSAGE_TYPES[ordinal] if 0 <= ordinal < len(MESSAGE_TYPES) else str(ordinal)
                if len(f) == 13:
                    r.success = _bool(f[12])
                elif len(f) >= 14:
                    r.offset_msg_id, r.success = f[12], _bool(f[13])
                    if len(f) >= 15:
                        r.client_host = f[14]
            elif kind == "SubBefore":
                r = TraceRecord("SubBefore", f[5], _int(f[1]), f[2], f[3], request_id=f[4], retry_times=_int(f[6]),
                                keys=f[7])
                if len(f) >= 9:
                    r.client_host = f[8]
            elif kind == "SubAfter":
                r = TraceRecord("SubAfter", f[2], request_id=f[1], cost_time=_int(f[3]), success=_bool(f[4]),
                                keys=f[5])
                if len(f) >= 7:
                    r.context_code = _int(f[6])
                if len(f) >= 9:
                    r.timestamp, r.group = _int(f[7]), f[8]
            elif kind == "EndTransaction":
                r = TraceRecord("EndTransaction", f[5], _int(f[1]), f[2], f[3], topic=f[4], tags=f[6], keys=f[7],
                                store_host=f[8], transaction_id=f[10], transaction_state=f[11])
                ordinal = _int(f[9])
                r.msg_type = MESSAGE_TYPES[ordinal] if 0 <= ordinal < len(MESSAGE_TYPES) else str(ordinal)
            else:
                continue
        except IndexError:
            continue
        out.append(r)
    return out


def encode_pub(r: TraceRecord) -> str:
    """A Pub record as the Java client writes it (TraceDataEncoder.encoderFromContextBean)."""
    fields = [
        "Pub", str(r.timestamp), r.region_id, r.group, r.topic, r.msg_id, r.tags, r.keys, r.store_host,
        str(r.body_length), str(r.cost_time), str(MESSAGE_TYPES.index(r.msg_type) if r.msg_type in MESSAGE_TYPES
                                                    else 0),
        r.offset_msg_id, "true" if r.success else "false",
    ]
    return CONTENT_SPLITOR.join(fields) + FIELD_SPLITOR


def encode_sub_before(r: TraceRecord) -> str:
    fields = ["SubBefore", str(r.timestamp), r.region_id, r.group, r.request_id, r.msg_id, str(r.retry_times),
              r.keys]
    return CONTENT_SPLITOR.join(fields) + FIELD_SPLITOR


def encode_sub_after(r: TraceRecord) -> str:
    fields = ["SubAfter", r.request_id, r.msg_id, str(r.cost_time), "true" if r.success else "false", r.keys,
              str(r.context_code), str(r.timestamp), r.group]
    return CONTENT_SPLITOR.join(fields) + FIELD_SPLITOR


def timeline(records: list[TraceRecord], msg_id: str) -> list[TraceRecord]:
    """The records about ``msg_id`` in time order (a SubAfter without a time follows its SubBefore)."""
    mine = [r for r in records if r.msg_id == msg_id]
    before = {r.request_id: r.timestamp for r in mine if r.trace_type == "SubBefore"}
    for r in mine:
        if r.trace_type == "SubAfter" and not r.timestamp:
            r.timestamp = before.get(r.request_id, 0) + r.cost_time
            if not r.group:
                r.group = next((b.group for b in mine if b.request_id == r.request_id and b.group), "")
    order = {"Pub": 0, "EndTransaction": 1, "SubBefore": 2, "SubAfter": 3}
    return sorted(mine, key=lambda r: (r.timestamp, order.get(r.trace_type, 9)))
