"""A message's properties as one string (``name\x01value`` joined by ``\x02``), and the tags hash."""

from __future__ import annotations

from collections.abc import Mapping

from ..javacompat.lang import java_string_hash

NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"


def properties_to_string(properties: Mapping[str, str | None] | None) -> str:
    """MessageDecoder.messageProperties2String: ``k\\x01v`` joined by ``\\x02``, no trailing separator.

    Entries whose value is None are left out, as Java does.
    """
    if not properties:
        return ""
    return PROPERTY_SEPARATOR.join([f"{k}{NAME_VALUE_SEPARATOR}{v}" for k, v in properties.items() if v is not None])


def string_to_properties(text: str | None) -> dict[str, str]:
    """MessageDecoder.string2messageProperties.

    Entries are split on ``\\x02`` and each at its first ``\\x01``; an entry with an
    empty name, an empty value or no ``\\x01`` is dropped, and a repeated name keeps
    its first position but takes the last value (HashMap.put).
    """
    result: dict[str, str] = {}
    if not text:
        return result
    for entry in text.split(PROPERTY_SEPARATOR):
        name, _, value = entry.partition(NAME_VALUE_SEPARATOR)
        # no separator leaves the value empty: dropped like an empty name or value
        if name and value:
            result[name] = value
    return result


def decode_properties(raw: bytes) -> dict[str, str]:
    return string_to_properties(raw.decode("utf-8", "replace")) if raw else {}



def tags_hash_code(tags: str | None) -> int:
    """ConsumeQueue tagsCode of a plain message: Java ``tags.hashCode()`` widened to long, 0 if none."""
    if not tags:
        return 0
    return java_string_hash(tags)
