"""The Java base class RpcRequestHeader: the ``bname`` field and how reflection orders it.

Twelve 4.9.8 request headers extend the abstract ``RpcRequestHeader``, which adds a
``bname`` (target broker name) field. Subclasses here declare ``bname`` themselves,
last, which is where the fast binary encoders write it.

Java builds ``extFields`` by walking a ``HashSet<Field>``; fields whose names land in
the same HashMap bucket keep that set's order, and a field's hash mixes in the name
of the class that declares it. For the inherited ``bname`` that is RpcRequestHeader,
not the subclass, which moves it relative to its bucket neighbours on the wire
(seen in captured UPDATE_CONSUMER_OFFSET and CONSUMER_SEND_MSG_BACK requests).
"""

from __future__ import annotations

from ...javacompat.hashmap import hashmap_order
from ...javacompat.lang import java_string_hash, to_int32
from .base import CommandHeader

RPC_REQUEST_HEADER_CLASS = "org.apache.rocketmq.common.rpc.RpcRequestHeader"
#: Java fields that RpcRequestHeader (not the subclass) declares.
INHERITED_FIELDS = frozenset({"bname"})


_REFLECTION_ORDERS: dict[type[CommandHeader], tuple[str, ...]] = {}


def reflection_order(cls: type[CommandHeader]) -> tuple[str, ...]:
    """Wire names in the order Java's field set yields them (java.lang.reflect.Field.hashCode)."""
    # a dict, not functools.cache: mypy checks a cache key against Hashable with the instances'
    # __hash__ (dataclasses: none), so it refuses a header class as the key
    order = _REFLECTION_ORDERS.get(cls)
    if order is None:
        order = _REFLECTION_ORDERS[cls] = _reflection_order(cls)
    return order


def _reflection_order(cls: type[CommandHeader]) -> tuple[str, ...]:
    by_hash: dict[int, str] = {}
    for spec in cls.fields_spec:
        owner = RPC_REQUEST_HEADER_CLASS if spec.java_name in INHERITED_FIELDS else cls.java_class
        h = to_int32(java_string_hash(owner) ^ java_string_hash(spec.java_name))
        if h in by_hash:  # never happens in 4.9.8; keep declaration order rather than guess
            return tuple(s.java_name for s in cls.fields_spec)
        by_hash[h] = spec.java_name
    return tuple(by_hash[h] for h in hashmap_order(by_hash))


class RpcRequestHeader(CommandHeader):
    """Base of the headers extending Java's RpcRequestHeader; not a header of its own."""

    java_class = RPC_REQUEST_HEADER_CLASS

    def to_ext_fields(self, *, fast_order: bool = False) -> dict[str, str]:
        if fast_order and self.fast_codes:
            return super().to_ext_fields(fast_order=True)
        out = {}
        for name in reflection_order(type(self)):
            spec = self._by_java[name]
            value = getattr(self, spec.attr)
            if value is not None:
                out[name] = spec.format(value)
        return {k: out[k] for k in hashmap_order(out)}
