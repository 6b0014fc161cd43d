"""Remote address patterns of ACL white lists (RemoteAddressStrategyFactory and its strategies).

A pattern compiles to an :data:`AddressMatcher`: one address, a list (``a,b``), a
``{a,b}`` last part, a ``*`` or ``a-b`` range in one part; IPv4 and IPv6.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable

from .permission import AclError, commons_split

AddressMatcher = Callable[[str | None], bool]


def is_ipv4(text: str | None) -> bool:
    if not text:
        return False
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


def is_ipv6(text: str | None) -> bool:
    if not text or "%" in text:
        return False
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def expand_ip(address: str, part: int) -> str:
    """AclUtils.expandIP: upper case, ``::`` widened to ``part`` groups, each group 4 digits."""
    address = address.upper()
    pad = part - address.count(":")
    if pad > 0:
        address = address.replace("::", ":" * (pad + 1))
    return ":".join(g.rjust(4, "0") for g in address.split(":"))


def _scope_error(address: str) -> AclError:
    return AclError(f"Netaddress examine scope Exception netaddress is {address}")


def _java_int(text: str, base: int = 10) -> int:
    text = text.strip() if base == 16 else text
    if not re.fullmatch(r"[+-]?[0-9a-fA-F]+" if base == 16 else r"[+-]?[0-9]+", text):
        raise AclError(f'For input string: "{text}"')
    return int(text, base)


def _ipv4_scope_ok(address: str, count: int) -> bool:
    parts = commons_split(address, ".")
    if len(parts) != 4:
        return False
    try:
        return all(0 <= int(parts[i].strip()) <= 255 for i in range(count))
    except ValueError as exc:
        raise AclError(str(exc)) from None


def _ipv6_scope_ok(address: str, count: int) -> bool:
    parts = commons_split(expand_ip(address, 8), ":")
    for i in range(count):
        try:
            value = int(parts[i], 16)
        except (ValueError, IndexError):
            return False
        if not 0 <= value <= 0xFFFF:
            return False
    return True


def _multiple(addresses: Iterable[str]) -> AddressMatcher:
    wanted: set[str] = set()
    for a in addresses:
        if is_ipv4(a):
            wanted.add(a)
        elif is_ipv6(a):
            wanted.add(expand_ip(a, 8))
        else:
            raise AclError(f"Netaddress examine Exception netaddress is {a}")

    def match(ip: str | None) -> bool:
        if ip is None:
            return False
        return (expand_ip(ip, 8) if is_ipv6(ip) else ip) in wanted

    return match


def _one(address: str) -> AddressMatcher:
    if not (is_ipv4(address) or is_ipv6(address)):
        raise AclError(f"Netaddress examine Exception netaddress is {address}")
    want = expand_ip(address, 8).upper()

    def match(ip: str | None) -> bool:
        return ip is not None and expand_ip(ip, 8).upper() == want

    return match


def _range_bounds(value: str, base: int, top: int) -> tuple[int, int] | None:
    value = value.strip()
    if value == "*":
        return 0, top
    if "-" in value:
        if value.startswith("-"):
            raise AclError(f"RangeRemoteAddressStrategy netaddress examine scope Exception value {value} ")
        pieces = commons_split(value, "-")
        start, end = _java_int(pieces[0], base), _java_int(pieces[1] if len(pieces) > 1 else "", base)
        if not (0 <= start <= top and 0 <= end <= top and start <= end):
            raise AclError(
                f"RangeRemoteAddressStrategy netaddress examine scope Exception start is {start} , end is {end}"
            )
        return start, end
    return None


def _range(pattern: str) -> AddressMatcher:
    """RangeRemoteAddressStrategy: one ``*`` or ``a-b`` part (the first found) bounds that part."""
    head: str | None = None
    index = 0
    start = end = 0
    if ":" in pattern:
        star, minus = pattern.find("*"), pattern.find("-")
        if star > -1 and star != len(pattern) - 1:
            raise _scope_error(pattern)
        if minus > -1:
            limit = pattern.rfind(":") if star == -1 else pattern.rfind(":", 0, pattern.rfind(":"))
            if minus <= limit:
                raise _scope_error(pattern)
        parts = commons_split(pattern, ":")
        for i in range(1, len(parts)):
            bounds = _range_bounds(parts[i], 16, 0xFFFF)
            index = i
            if bounds is not None:
                start, end = bounds
            if end > 0:
                if not _ipv6_scope_ok(pattern, index - 1):
                    raise _scope_error(pattern)
                if star > -1 and minus > -1:
                    sub, n = pattern[: pattern[: pattern.rfind(":")].rfind(":")], 6
                elif star == -1 and minus == -1:
                    sub, n = pattern, 8
                else:
                    sub, n = pattern[: pattern.rfind(":")], 7
                head = expand_ip(sub, n)
                index = len(commons_split(head, ":"))
                break
        v6_head, v6_index, v6_start, v6_end = head, index, start, end

        def match6(ip: str | None) -> bool:
            if v6_head is None or not is_ipv6(ip):
                return False
            full = expand_ip(ip or "", 8).upper()
            if not full.startswith(v6_head):
                return False
            value = int(full[5 * v6_index : 5 * v6_index + 4], 16)
            return v6_start <= value <= v6_end

        return match6
    parts = commons_split(pattern, ".")
    for i in (1, 2, 3):
        if i >= len(parts):
            raise _scope_error(pattern)
        bounds = _range_bounds(parts[i], 10, 255)
        index = i
        if bounds is not None:
            start, end = bounds
        if end > 0:
            if not _ipv4_scope_ok(pattern, index - 1):
                raise _scope_error(pattern)
            head = "".join(p.strip() + "." for p in parts[:index])
            break
    v4_head, v4_index, v4_start, v4_end = head, index, start, end

    def match4(ip: str | None) -> bool:
        if v4_head is None or ip is None or not is_ipv4(ip) or not ip.startswith(v4_head):
            return False
        if v4_index == 3:
            value = ip[len(v4_head) :]
        elif v4_index == 2:
            value = ip[len(v4_head) : ip.rfind(".")]
        else:
            value = ip[len(v4_head) : ip.rfind(".", 0, ip.rfind("."))]
        try:
            return v4_start <= int(value) <= v4_end
        except ValueError:
            return False

    return match4


def address_matcher(pattern: str | None) -> AddressMatcher:
    """RemoteAddressStrategyFactory.getRemoteAddressStrategy; raises AclError on a bad pattern."""
    if pattern is None or not pattern.strip():
        return lambda ip: False
    if pattern in ("*", "*.*.*.*", "*:*:*:*:*:*:*:*"):
        return lambda ip: True
    if pattern.endswith("}"):
        if ":" in pattern:
            last = commons_split(pattern, ":")[-1]
            if not last.startswith("{"):
                raise AclError("MultipleRemoteAddressStrategy netaddress examine scope Exception netaddress")
        else:
            parts = commons_split(pattern, ".")
            if len(parts) < 4:
                raise AclError("MultipleRemoteAddressStrategy has got a/some wrong format IP(s) ")
            last = parts[-1]
            if not last.startswith("{"):
                raise AclError("MultipleRemoteAddressStrategy netaddress examine scope Exception netaddress")
        prefix = pattern[: pattern.index("{")]
        return _multiple(prefix + p for p in commons_split(last[1:-1], ","))
    if "," in pattern:
        return _multiple(commons_split(pattern, ","))
    if "*" in pattern or "-" in pattern:
        return _range(pattern)
    return _one(pattern)
