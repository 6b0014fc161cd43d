"""Typed JSON bodies (RemotingSerializable subclasses) in fastjson's dialect.

A body class is a dataclass whose fields are declared with :func:`bfield` and a
value codec (``STR``, ``LONG``, ``list_of(...)``, ``map_of(...)``, ``obj(Cls)``...).
fastjson writes a bean's properties sorted by name and skips nulls; maps keep the
order they have (Java's HashMap order, or as parsed) unless MapSortField sorts them.
Unknown properties are kept in ``extra`` so a body re-encodes to what was read.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from ...javacompat.lang import parse_java_int
from .. import fastjson
from ..errors import CodecError

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Codec(Generic[T]):
    """Converts one JSON value to its Python view and back."""

    name: str
    load: Callable[[Any], T]
    dump: Callable[[T], Any]
    #: what the codec is ("str", "int", "long", "bool", "double", "any", "enum", "list",
    #: "set", "array", "map", "obj") and its parts, for tools that walk a body's shape
    #: (test-data generators, docs)
    kind: str = "any"
    args: tuple[Any, ...] = ()


def _expect(kind: type | tuple[type, ...], what: str) -> Callable[[Any], Any]:
    def load(v: Any) -> Any:
        if isinstance(v, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            raise CodecError(f"expected {what}, got a boolean")
        if not isinstance(v, kind):
            raise CodecError(f"expected {what}, got {type(v).__name__}")
        return v

    return load


def _int_loader(bits: int) -> Callable[[Any], int]:
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1

    def load(v: Any) -> int:
        # fastjson reads numbers given as strings too (BrowserCompatible writes big longs quoted)
        if isinstance(v, str):
            parsed = parse_java_int(v, bits)
            if parsed is None:
                raise CodecError(f"expected a {bits}-bit Java integer, got {v[:40]!r}")
            return parsed
        if isinstance(v, bool) or not isinstance(v, int):
            raise CodecError(f"expected an integer, got {type(v).__name__}")
        if not lo <= v <= hi:
            raise CodecError(f"{v} does not fit a {bits}-bit Java integer")
        return v

    return load


def _load_float(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise CodecError(f"expected a number, got {type(v).__name__}")
    try:
        return float(v)
    except (ValueError, OverflowError):
        raise CodecError(f"expected a number, got {str(v)[:40]!r}") from None


def _load_bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if v in ("true", "false"):
        return v == "true"
    if isinstance(v, int):
        return v != 0
    raise CodecError(f"expected a boolean, got {type(v).__name__}")


def _ident(v: Any) -> Any:
    return v


STR: Codec[str] = Codec("String", _expect(str, "a string"), _ident, "str")
INT: Codec[int] = Codec("int", _int_loader(32), _ident, "int")
LONG: Codec[int] = Codec("long", _int_loader(64), _ident, "long")
BOOL: Codec[bool] = Codec("boolean", _load_bool, _ident, "bool")
DOUBLE: Codec[float] = Codec("double", _load_float, _ident, "double")
ANY: Codec[Any] = Codec("Object", _ident, _ident, "any")


def _load_bytes(v: Any) -> bytes:
    if not isinstance(v, str):
        raise CodecError(f"expected base64 text, got {type(v).__name__}")
    try:
        return base64.b64decode(v, validate=True)
    except ValueError:
        raise CodecError(f"expected base64 text, got {v[:40]!r}") from None


#: a Java ``byte[]``: fastjson writes it as base64 text
BYTES: Codec[bytes] = Codec("byte[]", _load_bytes, lambda v: base64.b64encode(v).decode("ascii"), "bytes")


def enum_of(cls: type[enum.Enum]) -> Codec[Any]:
    """A Java enum: fastjson writes its name (and reads a name or an ordinal)."""
    members = list(cls)

    def load(v: Any) -> Any:
        if isinstance(v, str):
            try:
                return cls[v]
            except KeyError:
                raise CodecError(f"{v!r} is not a {cls.__name__}") from None
        if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < len(members):
            return members[v]
        raise CodecError(f"expected a {cls.__name__} name, got {v!r}")

    return Codec(cls.__name__, load, lambda v: v.name, "enum", (cls,))


def list_of(item: Codec[Any]) -> Codec[list[Any]]:
    def load(v: Any) -> list[Any]:
        if not isinstance(v, list):
            raise CodecError(f"expected a list of {item.name}, got {type(v).__name__}")
        return [None if x is None else item.load(x) for x in v]

    return Codec(
        f"List<{item.name}>", load, lambda v: [None if x is None else item.dump(x) for x in v], "list", (item,)
    )


def set_of(item: Codec[Any]) -> Codec[list[Any]]:
    """A Java Set: kept as an ordered list, since the order on the wire matters for identity.
    (PrettyFormat writes a Set on one line, unlike a List.)"""
    c = list_of(item)
    return Codec(f"Set<{item.name}>", c.load, lambda v: fastjson.CompactArray(c.dump(v)), "set", (item,))


def array_of(item: Codec[Any]) -> Codec[list[Any]]:
    """A Java primitive array (``int[]``): a list, written on one line even when pretty."""
    c = list_of(item)
    return Codec(f"{item.name}[]", c.load, lambda v: fastjson.CompactArray(c.dump(v)), "array", (item,))


def map_of(key: Codec[Any], value: Codec[Any]) -> Codec[dict[Any, Any]]:
    def load_key(k: Any) -> Any:
        if k is None:
            raise CodecError("null map key")
        k = fastjson.thaw(k)
        if isinstance(k, str) and key.kind == "obj":
            # a bean key written as a string (WriteNonStringKeyAsString / BrowserCompatible)
            k = fastjson.loads(k)
        out = key.load(k)
        try:
            hash(out)
        except TypeError:
            raise CodecError(f"unusable map key {k!r}") from None
        return out

    def load(v: Any) -> dict[Any, Any]:
        if not isinstance(v, dict):
            raise CodecError(f"expected a map, got {type(v).__name__}")
        return {load_key(k): (None if x is None else value.load(x)) for k, x in v.items()}

    def dump(v: dict[Any, Any]) -> dict[Any, Any]:
        # a bean key (MessageQueue...) becomes a hashable ObjectKey that is written as an object
        return {fastjson.freeze(key.dump(k)): (None if x is None else value.dump(x)) for k, x in v.items()}

    return Codec(f"Map<{key.name},{value.name}>", load, dump, "map", (key, value))


def obj(cls: type[JsonBody] | Callable[[], type[JsonBody]]) -> Codec[Any]:
    """A nested bean; pass a lambda for classes defined later."""

    def resolve() -> type[JsonBody]:
        return cls if isinstance(cls, type) else cls()

    return Codec(
        getattr(cls, "__name__", "Object"),
        lambda v: resolve().from_json(v),
        lambda v: v.to_json(),
        "obj",
        (resolve,),
    )


def bfield(
    codec: Codec[Any],
    *,
    java: str | None = None,
    default: Any = None,
    factory: Callable[[], Any] | None = None,
    computed: Callable[[Any], Any] | None = None,
    doc: str = "",
) -> Any:
    """Declare a bean property: its value codec, wire name (camelCase of the attr by default)
    and Java initializer (mutable defaults are copied per instance; ``factory`` for
    initializers computed at construction, like ``System.currentTimeMillis()``).

    ``computed`` is for a getter with no field behind it (``isDead()``...): fastjson writes
    what it returns, so when the attribute is None it is computed from the bean on encode."""
    meta = {"rocketpy": (codec, java, doc, computed)}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=meta)
    if isinstance(default, (list, dict, set)):
        return dataclasses.field(default_factory=lambda: type(default)(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


@dataclasses.dataclass(frozen=True)
class PropSpec:
    attr: str
    java_name: str
    codec: Codec[Any]
    doc: str
    computed: Callable[[Any], Any] | None = None


B = TypeVar("B", bound="JsonBody")


class JsonBody:
    """Base of every JSON body; subclasses become kw-only dataclasses."""

    if TYPE_CHECKING:
        # subclasses become kw-only dataclasses at class creation; their fields' defaults are set by
        # jfield/bfield in ways dataclass_transform cannot express, so checkers see keyword arguments
        def __init__(self, **fields: Any) -> None: ...

    java_class: ClassVar[str] = ""
    props: ClassVar[tuple[PropSpec, ...]] = ()
    _by_java: ClassVar[dict[str, PropSpec]] = {}
    extra: dict[str, Any]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "extra" not in cls.__dict__.get("__annotations__", {}):
            cls.__annotations__ = {**cls.__dict__.get("__annotations__", {}), "extra": "dict[str, Any]"}
            cls.extra = dataclasses.field(default_factory=dict, repr=False, compare=False)
        dataclasses.dataclass(kw_only=True)(cls)
        specs = []
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if f.name == "extra":
                continue
            meta = f.metadata.get("rocketpy")
            if meta is None:
                raise TypeError(f"{cls.__name__}.{f.name} must be declared with bfield()")
            codec, java, doc, computed = meta
            specs.append(PropSpec(f.name, java or _camel(f.name), codec, doc, computed))
        cls.props = tuple(sorted(specs, key=lambda s: s.java_name))
        cls._by_java = {s.java_name: s for s in specs}

    @classmethod
    def from_json(cls: type[B], data: Any) -> B:
        if not isinstance(data, dict):
            raise CodecError(f"{cls.__name__}: expected a JSON object, got {type(data).__name__}")
        values: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, raw in data.items():
            spec = cls._by_java.get(key) if isinstance(key, str) else None
            if spec is None:
                extra[key] = raw
                continue
            if raw is None:
                values[spec.attr] = None
                continue
            try:
                values[spec.attr] = spec.codec.load(raw)
            except CodecError as exc:
                raise CodecError(f"{cls.__name__}.{key}: {exc}") from None
        return cls(**values, extra=extra)

    def to_json(self) -> dict[str, Any]:
        """Properties in fastjson's order (sorted by name), nulls left out."""
        out: dict[str, Any] = fastjson.Bean()
        for spec in self.props:
            value = getattr(self, spec.attr)
            if value is None and spec.computed is not None:
                value = spec.computed(self)
            if value is not None:
                out[spec.java_name] = spec.codec.dump(value)
        if self.extra:
            out.update(self.extra)
            out = fastjson.Bean((k, out[k]) for k in sorted(out, key=lambda k: str(k)))
        return out

    def encode_streamed(
        self, attr: str | Sequence[str], items: Iterable[Any] | Mapping[Any, Any], **features: bool
    ) -> bytes:
        """:meth:`encode` with the list or map property ``attr`` made of ``items``, each value converted and
        written as it comes: what the body holds at once is one value's JSON tree and the text before it, not
        every value's tree (a broker's consume stats, its topic, group and offset tables).

        ``attr`` may be a path of attributes to a property of a nested bean (the topic table inside a
        RegisterBrokerBody); the property itself must hold an empty list or map, which keeps its place.
        Every feature of :meth:`encode` applies, ``pretty`` too.

        A list's items are consumed, and each written to text at the indent level the whole writer would use,
        before the other properties are read: they may set them as they go (a total). A map (a Mapping or
        (key, value) pairs) is read as the writer reaches it, each value converted then: it must not change
        until this returns (on the trio thread: no await meanwhile; in a worker thread: a snapshot)."""
        path = (attr,) if isinstance(attr, str) else tuple(attr)
        owner: JsonBody = self
        beans: list[str] = []  # the nested beans' wire names, to find the property's place in to_json's tree
        for name in path[:-1]:
            spec = owner._spec(name)
            nested = getattr(owner, name)
            if spec.codec.kind != "obj" or not isinstance(nested, JsonBody):
                raise TypeError(f"{type(owner).__name__}.{name} is not a bean to stream a property of")
            owner = nested
            beans.append(spec.java_name)
        spec = owner._spec(path[-1])
        kind = spec.codec.kind
        if kind not in ("list", "set", "array", "map") or getattr(owner, spec.attr) is None:
            raise TypeError(f"{type(owner).__name__}.{spec.attr} is not a list or map (an empty one holds its place)")
        written: Any
        if kind == "map":
            key, value = spec.codec.args
            written = fastjson.StreamedMap(items, lambda k: fastjson.freeze(key.dump(k)), value.dump)
        else:
            # the root bean is written at level 0, each property's value one level deeper than its bean, a
            # List's items one deeper again (a Set or primitive array stays on its line, at its own level)
            level = len(path) + (kind == "list")
            (item,) = spec.codec.args
            written = [
                None if x is None else fastjson.RawJson(fastjson.dumps(item.dump(x), level=level, **features))
                for x in items
            ]
            if kind != "list":
                written = fastjson.CompactArray(written)
        out = node = self.to_json()
        for java_name in beans:
            node = node[java_name]
        node[spec.java_name] = written  # in the place to_json gave the (empty) list or map
        return fastjson.dump_bytes(out, **features)

    @classmethod
    def _spec(cls, attr: str) -> PropSpec:
        for spec in cls.props:
            if spec.attr == attr:
                return spec
        raise AttributeError(f"{cls.__name__} has no property {attr!r}")

    @classmethod
    def decode(cls: type[B], data: bytes | str) -> B:
        return cls.from_json(fastjson.loads(data))

    def encode(
        self,
        *,
        browser_compatible: bool = False,
        non_string_keys_as_string: bool = False,
        sort_map_keys: bool = False,
        pretty: bool = False,
    ) -> bytes:
        """Bytes as RemotingSerializable.encode (fastjson defaults) or with the given features;
        ``pretty`` is ``toJson(true)``, the form of the broker's config files."""
        return fastjson.dump_bytes(
            self.to_json(),
            browser_compatible=browser_compatible,
            non_string_keys_as_string=non_string_keys_as_string,
            sort_map_keys=sort_map_keys,
            pretty=pretty,
        )
