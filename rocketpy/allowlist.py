"""Address allow-lists of rocketpy's own settings: who may connect to a broker's HA port
(``haAllowedAddresses``) and who may register brokers with, or administer, a NameServer
(``registerAllowedAddresses``, ``adminAllowedAddresses``). Java 4.9.8 has none of them: its HA port and
NameServer serve any address (see SECURITY.md).

A list is entries separated by commas, semicolons or spaces; each entry is

* an address (``10.0.0.5``, ``::1``) or a network (``10.0.0.0/8``, ``fd00::/8``);
* ``loopback``: 127.0.0.0/8 and ::1;
* ``private``: the ranges that are not routed on the Internet: RFC 1918 (10/8, 172.16/12, 192.168/16),
  shared address space (100.64/10, Kubernetes and carrier NAT), link-local (169.254/16, fe80::/10) and
  unique local IPv6 (fc00::/7), where a broker on another host of the same network, a container of a
  compose network or a Kubernetes pod connects from;
* ``*``: any address, as Java;
* a keyword the setting defines (``slaves`` for ``haAllowedAddresses``).

An IPv4-mapped IPv6 peer (``::ffff:10.0.0.5``, a dual-stack socket) is matched as its IPv4 address.
Pure module (no I/O).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Iterable

__all__ = ["LOOPBACK", "PRIVATE", "AllowList", "host_of", "parse_ip"]

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

LOOPBACK: tuple[Network, ...] = (ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128"))
PRIVATE: tuple[Network, ...] = tuple(
    ipaddress.ip_network(n)
    for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16",
              "fc00::/7", "fe80::/10")
)
_NAMED = {"loopback": LOOPBACK, "private": PRIVATE}
_SPLIT = re.compile(r"[,;\s]+")


def host_of(addr: str | None) -> str:
    """The host of a peer address as the servers name it (``1.2.3.4:5678``, ``::1:5678``, ``[::1]:5678``)."""
    if not addr:
        return ""
    host = addr.rsplit(":", 1)[0] if ":" in addr else addr
    return host.strip("[]")


def parse_ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address ``host`` names (an IPv4-mapped IPv6 address as its IPv4 one, a zone left out), or None."""
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


@dataclasses.dataclass(frozen=True)
class AllowList:
    """One parsed list; :meth:`allows` answers for one peer host."""

    text: str
    networks: tuple[Network, ...] = ()
    any: bool = False
    #: the setting's own keywords the list names (``slaves``): the caller decides what they allow
    keywords: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, text: str, keywords: Iterable[str] = ()) -> AllowList:
        """ValueError, naming the entry, for one that is none of the forms above."""
        own = frozenset(keywords)
        networks: list[Network] = []
        named: set[str] = set()
        anyone = False
        for entry in _SPLIT.split(text.strip()):
            if not entry:
                continue
            word = entry.lower()
            if word == "*":
                anyone = True
            elif word in _NAMED:
                networks.extend(_NAMED[word])
            elif word in own:
                named.add(word)
            else:
                try:
                    networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
                except ValueError:
                    forms = ", ".join(["an address", "a network (10.0.0.0/8)", "loopback", "private", "*",
                                       *sorted(own)])
                    raise ValueError(f"{entry!r} is not an address allow-list entry ({forms})") from None
        return cls(text.strip(), tuple(networks), anyone, frozenset(named))

    def allows(self, host: str) -> bool:
        """Whether ``host`` (an IP address, without port) is in the list's addresses (keywords aside)."""
        if self.any:
            return True
        ip = parse_ip(host)
        return ip is not None and any(ip in net for net in self.networks)
