"""Typed views of RemotingCommand ``extFields``: the CommandCustomHeader classes.

Java turns a header object into string ``extFields`` by reflection: every non-null
field goes in as ``String.valueOf(value)``; primitives are never null so always go
in. Decoding parses each field by its Java type and refuses a missing @CFNotNull
field. A header here is a dataclass whose fields carry that Java typing, declared
once with :func:`jfield` and used by servers, clients, the sniffer and Spark alike.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from ...javacompat.hashmap import hashmap_order
from ...javacompat.lang import parse_java_int
from ..errors import BadFieldValue, CodecError, MissingField

log = logging.getLogger("rocketpy.codecs")

JavaKind = Literal["String", "int", "Integer", "long", "Long", "boolean", "Boolean", "double", "Double"]


@dataclasses.dataclass(frozen=True, slots=True)
class FieldSpec:
    """How one header field travels: its Python name, wire name and Java type."""

    attr: str
    java_name: str
    kind: JavaKind
    required: bool
    doc: str = ""

    @property
    def primitive(self) -> bool:
        return self.kind[0].islower() and self.kind != "String"

    def parse(self, text: str, header: str) -> Any:
        kind = self.kind.lower()
        if kind == "string":
            return text
        if kind == "boolean":
            return text.lower() == "true"  # Boolean.parseBoolean: anything else is false
        if kind == "double":
            try:
                return float(text)
            except ValueError:
                raise BadFieldValue(header, self.java_name, self.kind, text) from None
        value = parse_java_int(text, 32 if kind in ("int", "integer") else 64)
        if value is None:
            raise BadFieldValue(header, self.java_name, self.kind, text)
        return value

    def format(self, value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, float):
            return _java_double(value)
        return str(value)


def _java_double(value: float) -> str:
    # Double.toString keeps a fractional part; Python's repr agrees for ordinary values
    text = repr(float(value))
    if "e" in text:
        mantissa, exp = text.split("e")
        if "." not in mantissa:
            mantissa += ".0"
        text = f"{mantissa}E{int(exp)}"
    return text


_DEFAULTS: dict[str, Any] = {"int": 0, "long": 0, "boolean": False, "double": 0.0}


def jfield(
    kind: JavaKind,
    *,
    required: bool = False,
    default: Any = dataclasses.MISSING,
    java: str | None = None,
    doc: str = "",
) -> Any:
    """Declare a header field of Java type ``kind``.

    ``required`` is Java's @CFNotNull; ``default`` is the Java field initializer
    (primitives default to 0/false, boxed types to null); ``java`` overrides the
    wire name when it is not the camelCase of the Python name.
    """
    if default is dataclasses.MISSING:
        default = _DEFAULTS.get(kind)
    meta = {"rocketpy": (kind, required, java, doc)}
    return dataclasses.field(default=default, metadata=meta)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


H = TypeVar("H", bound="CommandHeader")


class CommandHeader:
    """Base of every typed header. Subclasses are made dataclasses by ``__init_subclass__``."""

    if TYPE_CHECKING:
        # subclasses become kw-only dataclasses at class creation; their fields' defaults are set by
        # jfield/bfield in ways dataclass_transform cannot express, so checkers see keyword arguments
        def __init__(self, **fields: Any) -> None: ...

    java_class: ClassVar[str] = ""
    #: FastCodesHeader classes write their fields in declared order in ROCKETMQ binary headers
    fast_codes: ClassVar[bool] = False
    fields_spec: ClassVar[tuple[FieldSpec, ...]] = ()
    _by_java: ClassVar[dict[str, FieldSpec]] = {}
    #: what check_wire_values looks at: every field but the Strings, and whether Java leaves it null
    #: when it is absent (a boxed type with no initializer)
    _wire_checked: ClassVar[tuple[tuple[FieldSpec, bool], ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dataclasses.dataclass(kw_only=True)(cls)
        specs = []
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            meta = f.metadata.get("rocketpy")
            if meta is None:
                raise TypeError(f"{cls.__name__}.{f.name} must be declared with jfield()")
            kind, required, java, doc = meta
            specs.append(FieldSpec(f.name, java or _camel(f.name), kind, required, doc))
        cls.fields_spec = tuple(specs)
        cls._by_java = {s.java_name: s for s in specs}
        defaults = {f.name: f.default for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        cls._wire_checked = tuple(
            (s, not s.primitive and defaults[s.attr] is None) for s in specs if s.kind != "String"
        )

    @classmethod
    def from_ext_fields(cls: type[H], ext: Mapping[str, str] | None, *, lenient: bool = False) -> H:
        """Decode ``extFields``; CodecError on bad values.

        ``lenient`` is what Java 4.9.8's decodeCommandCustomHeader really does on a server:
        a missing @CFNotNull field or an unparsable value is logged and the field keeps its
        initializer, and nothing (not even checkFields) runs when extFields is absent.
        """
        name = cls.__name__
        if ext is None and lenient:
            return cls()
        ext = ext or {}
        values: dict[str, Any] = {}
        for spec in cls.fields_spec:
            text = ext.get(spec.java_name)
            try:
                if text is None:
                    if spec.required:
                        raise MissingField(name, spec.java_name)
                    continue
                if not isinstance(text, str):
                    raise CodecError(f"{name}: field <{spec.java_name}> is not a string")
                values[spec.attr] = spec.parse(text, name)
            except MissingField:
                if not lenient:
                    raise
            except CodecError as exc:
                if not lenient:
                    raise
                log.warning("header %s field %s: %s", name, spec.java_name, exc)
        header = cls(**values)
        header.check_fields()
        return header

    @classmethod
    def check_wire_values(cls, ext: Mapping[str, str] | None) -> None:
        """Refuse, before any handler sees them, the extFields a typed header cannot hold.

        A number field (int, long, double and their boxed forms) must parse as Java parses it
        (BadFieldValue: Java's NumberFormatException), and a @CFNotNull boxed number or Boolean with
        no initializer must be present (MissingField). Java 4.9.8's reflective decode logs both and
        leaves the field null (or at its initializer), which the handler then unboxes: a
        NullPointerException answered SYSTEM_ERROR. Refusing up front gives that answer, with the
        cause in the remark, and keeps a value beyond its Java type out of memory and config files.
        Missing Strings and primitives stay Java's (null, the initializer) for the handler to judge.
        """
        for spec, null_if_absent in cls._wire_checked:
            text = ext.get(spec.java_name) if ext else None
            if text is None:
                if spec.required and null_if_absent:
                    raise MissingField(cls.__name__, spec.java_name)
            elif spec.kind not in ("boolean", "Boolean"):  # Boolean.parseBoolean takes anything
                spec.parse(text, cls.__name__)

    def check_fields(self) -> None:
        """Java's CommandCustomHeader.checkFields, run after decoding; raise CodecError to refuse."""

    def to_ext_fields(self, *, fast_order: bool = False) -> dict[str, str]:
        """The ``extFields`` Java would send for this header.

        Keys come in java.util.HashMap order (what Java's JSON header carries), or in
        declared order for FastCodesHeader classes in a ROCKETMQ binary header.
        """
        out = {}
        for spec in self.fields_spec:
            value = getattr(self, spec.attr)
            if value is not None:
                out[spec.java_name] = spec.format(value)
        if fast_order and self.fast_codes:
            return out
        return {k: out[k] for k in hashmap_order(out)}

    def check_required(self) -> None:
        """Raise MissingField for a @CFNotNull field left as None."""
        for spec in self.fields_spec:
            if spec.required and getattr(self, spec.attr) is None:
                raise MissingField(type(self).__name__, spec.java_name)


HeaderType = type[CommandHeader]


Decoder = Callable[[Mapping[str, str]], CommandHeader]
