"""Java's text forms that mqadmin prints: toString() of its beans, fastjson's pretty JSON, and the
iteration order of java.util.HashMap/Properties (mqadmin prints maps as they come). Also the layout of
the client tracer's records. Pure functions, used by ``rocketpy admin``."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from ..codecs.bodies import MessageQueue
from ..codecs.message import MessageExt
from ..javacompat.lang import java_string_hash, to_int32


def java_name(value: Any) -> str:
    return "null" if value is None else getattr(value, "name", str(value))


def java_bool(value: bool) -> str:
    return "true" if value else "false"


def _mq_hash(mq: MessageQueue) -> int:
    """MessageQueue.hashCode (brokerName, queueId, topic)."""
    h = 1
    for part in (java_string_hash(mq.broker_name or ""), mq.queue_id, java_string_hash(mq.topic or "")):
        h = to_int32(31 * h + part)
    return h


def java_hash_order(keys: list[Any], hash_of: Callable[[Any], int] | None = None) -> list[Any]:
    """The order a java.util.HashMap of these keys (inserted in this order) iterates in: mqadmin prints
    such maps as they come. ``hash_of`` is the key's hashCode (MessageQueue's by default)."""
    hash_of = hash_of or _mq_hash
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: Any) -> int:
        h = hash_of(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(keys, key=bucket)  # stable: a bucket keeps insertion order


def java_properties_order(keys: list[str]) -> list[str]:
    """The order java.util.Properties iterates String keys put in this order: Java 9+ keeps them in a
    ConcurrentHashMap (16 bins to start, doubled when 3/4 full; new keys go to the end of their bin, and
    a resize moves each bin's nodes before its last same-side run to the front, reversed). mqadmin's
    config dumps come out in this order."""

    def spread(key: str) -> int:
        h = java_string_hash(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & 0x7FFFFFFF

    bins: list[list[str]] = [[] for _ in range(16)]
    count = 0
    for key in keys:
        chain = bins[spread(key) & (len(bins) - 1)]
        if key in chain:
            continue
        chain.append(key)
        count += 1
        if count >= len(bins) - (len(bins) >> 2):
            bins = _chm_transfer(bins, spread)
    return [k for chain in bins for k in chain]


def _chm_transfer(bins: list[list[str]], spread: Callable[[str], int]) -> list[list[str]]:
    """ConcurrentHashMap.transfer: each bin splits into a low and a high one."""
    n = len(bins)
    new: list[list[str]] = [[] for _ in range(2 * n)]
    for i, chain in enumerate(bins):
        if not chain:
            continue
        last = len(chain) - 1  # lastRun: the start of the tail whose nodes all go the same way
        side = spread(chain[-1]) & n
        for j in range(len(chain) - 2, -1, -1):
            if spread(chain[j]) & n != side:
                break
            last = j
        low: list[str] = []
        high: list[str] = []
        (low if side == 0 else high).extend(chain[last:])
        for key in chain[:last]:  # the rest are pushed in front, one by one
            (low if spread(key) & n == 0 else high).insert(0, key)
        new[i], new[i + n] = low, high
    return new


def java_str(value: str | None) -> str:
    return "null" if value is None else value  # String.format("%s", null)


def java_props(props: dict[str, str]) -> str:
    """A message's properties as Java prints its HashMap."""
    return "{" + ", ".join(f"{k}={props[k]}" for k in java_hash_order(list(props), java_string_hash)) + "}"


def message_ext_str(m: MessageExt, broker_name: str | None) -> str:
    """MessageExt.toString (bodies as Java's Arrays.toString of signed bytes)."""
    body = ", ".join(str(b - 256 if b > 127 else b) for b in m.body)
    tx = m.properties.get("__transactionId__")
    return (f"MessageExt [brokerName={broker_name}, queueId={m.queue_id}, storeSize={m.store_size}, "
            f"queueOffset={m.queue_offset}, sysFlag={m.sys_flag}, bornTimestamp={m.born_timestamp}, "
            f"bornHost=/{m.born_host}, storeTimestamp={m.store_timestamp}, storeHost=/{m.store_host}, "
            f"msgId={m.msg_id}, commitLogOffset={m.commit_log_offset}, bodyCRC={m.body_crc}, "
            f"reconsumeTimes={m.reconsume_times}, preparedTransactionOffset={m.prepared_transaction_offset}, "
            f"toString()=Message{{topic='{m.topic}', flag={m.flag}, properties={java_props(dict(m.properties))}, "
            f"body=[{body}], transactionId='{java_str(tx)}'}}]")


def _human_ms(ms: int) -> str:
    """UtilAll.timeMillisToHumanString: yyyyMMddHHmmssSSS."""
    return datetime.fromtimestamp(ms / 1000).strftime("%Y%m%d%H%M%S") + f"{ms % 1000:03d}"


def mq_str(mq: MessageQueue) -> str:
    return f"MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}]"


def process_queue_str(pq: Any) -> str:
    """ProcessQueueInfo.toString."""
    return (f"ProcessQueueInfo [commitOffset={pq.commit_offset}, cachedMsgMinOffset={pq.cached_msg_min_offset}, "
            f"cachedMsgMaxOffset={pq.cached_msg_max_offset}, cachedMsgCount={pq.cached_msg_count}, "
            f"cachedMsgSizeInMiB={pq.cached_msg_size_in_mib}, transactionMsgMinOffset={pq.transaction_msg_min_offset}, "
            f"transactionMsgMaxOffset={pq.transaction_msg_max_offset}, transactionMsgCount={pq.transaction_msg_count}, "
            f"locked={java_bool(pq.locked)}, tryUnlockTimes={pq.try_unlock_times}, "
            f"lastLockTimestamp={_human_ms(pq.last_lock_timestamp)}, droped={java_bool(pq.droped)}, "
            f"lastPullTimestamp={_human_ms(pq.last_pull_timestamp)}, "
            f"lastConsumeTimestamp={_human_ms(pq.last_consume_timestamp)}]")


class JavaSet(list):
    """A java.util.Set for fastjson_pretty, which writes a Set on one line (``["a","b"]``), unlike a List."""


def fastjson_pretty(value: Any, depth: int = 0) -> str:
    """JSON.toJSONString(value, true): TAB indentation, no space after ':'; dicts print in the order given."""
    if isinstance(value, dict):
        if not value:
            return "{}"
        inner = ",\n".join("\t" * (depth + 1) + json.dumps(str(k)) + ":" + fastjson_pretty(v, depth + 1)
                           for k, v in value.items())
        return "{\n" + inner + "\n" + "\t" * depth + "}"
    if isinstance(value, JavaSet):
        return "[" + ",".join(fastjson_pretty(v, depth + 1) for v in value) + "]"
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[\n" + ",\n".join("\t" * (depth + 1) + fastjson_pretty(v, depth + 1) for v in value) + "\n" + \
            "\t" * depth + "]"
    if isinstance(value, bool):
        return java_bool(value)
    return json.dumps(value, ensure_ascii=False)


#: TraceConstants: between the fields of a trace record, and between records
_TRACE_CONTENT, _TRACE_FIELD = "\x01", "\x02"


def decode_trace(body: str, msg_id: str) -> list[dict[str, Any]]:
    """The Pub and SubAfter records about ``msg_id`` in one trace message (TraceDataEncoder's layout)."""
    views = []
    for record in body.split(_TRACE_FIELD):
        f = record.split(_TRACE_CONTENT)
        try:
            if f[0] == "Pub" and f[5] == msg_id:
                ok = f[13] if len(f) >= 14 else f[12]
                views.append({"type": "Pub", "group": f[3], "timestamp": int(f[1]), "costTime": int(f[10]),
                              "success": ok.strip().lower() == "true"})
            elif f[0] == "SubAfter" and f[2] == msg_id:
                views.append({"type": "SubAfter", "group": f[8] if len(f) >= 9 else None,
                              "timestamp": int(f[7]) if len(f) >= 9 else 0, "costTime": int(f[3]),
                              "success": f[4].strip().lower() == "true"})
        except (IndexError, ValueError):
            continue  # a record of another kind or version: mqadmin skips what it cannot read too
    return views
