"""``fuzz_servers.py --mode config-injection`` (issue #46): UPDATE_BROKER_CONFIG (25) and UPDATE_NAMESRV_CONFIG
(318) bodies that try to change a key the servers keep from remote updates, checked after each one.

A body is a few lines of Properties text: a black-listed or ordinary key, spelled as Properties lets one
spell it (``\\uXXXX`` escapes, escaped letters, continuation lines, upper or lower case, escaped trailing
blanks), a separator (``=``, ``:``, blanks), a value of pieces that hide lines (``\\n``, ``\\r``, ``\\u000a``, a
continuation, real CR and LF, U+2028, NEL) and of ``key=value`` text to smuggle, and a line end; or random
text of those pieces. After each body the server's settings (GET_BROKER_CONFIG / GET_NAMESRV_CONFIG), its file,
and the settings that file gives a restart (BrokerConfig.load, NamesrvConfig.from_file: what ``mqbroker -c``
and ``mqnamesrv -c`` start with) must hold the black-listed keys as they were at the start: a change is a
finding, with the body that made it and the ones before.

Only ordinary keys whose change leaves the run's checker alone are used (no brokerPermission, no flush or
store sizes), so that the usual checker and prober go on beside this mode.
"""

from __future__ import annotations

import random
import time
from collections import deque
from pathlib import Path
from typing import Any

from rocketpy.broker.config import BrokerConfig
from rocketpy.broker.configuration import JAVA_BLACK_LISTED, REMOTE_REFUSED_KEYS
from rocketpy.codecs.codes import RequestCode
from rocketpy.javacompat import properties
from rocketpy.namesrv import config as namesrv_config
from rocketpy.namesrv.config import NamesrvConfig
from rocketpy.testing import BrokerTestClient, broker_client

BROKER_BLACK = sorted(JAVA_BLACK_LISTED | REMOTE_REFUSED_KEYS.keys())
NAMESRV_BLACK = sorted({*namesrv_config.ALWAYS_BLACK_LISTED, *namesrv_config.REMOTE_REFUSED_KEYS,
                        "tls.server.mode", "tls.server.keyPath", "tls.server.keyPassword"})
ORDINARY = {"broker": ["deleteWhen", "fileReservedTime", "regionId"],
            "namesrv": ["productEnvName", "orderMessageEnable"]}
VALUE_PIECES = ["/x", "0.0.0.0", "04", "72", "true", "\\n", "\\r", "\\r\\n", "\\u000a", "\\u000D", "\\u000a\\u000d",
                "\n", "\r\n", "\r", "\\\n", "\\\r\n  ", "=", ":", " ", "#", "!", "\\", "\\\\", "\\u2028", "\u2028",
                "\u0085", "\\u0085", "é", "\\u00e9", "\\t", "\\f", "\\u", "storePathRootDir=/x", "listenHost=0.0.0.0",
                "kvConfigPath=/tmp/kv.json", "brokerConfigPath=/z", "aclPlainFile=/nonexistent",
                "tls.server.mode=disabled"]
SEPARATORS = ["=", ":", " ", " = ", "\t: ", "=\\\n  ", "\\\n="]
LINE_ENDS = ["\n", "\r\n", "\r", "\n# a comment\\\n", "\n\n", "\\\n", "\\\\\n", "\\\r\n", ""]


def spell(rng: random.Random, key: str) -> str:
    """``key`` as one of the ways Properties text may name it (or nearly: case, a trailing blank)."""
    cut = rng.randint(1, len(key) - 1)
    ways = [
        key, f"\\u{ord(key[0]):04x}{key[1:]}", f"{key[:cut]}\\\n{' ' * rng.randint(0, 3)}{key[cut:]}",
        f"{key[:cut]}\\\r\n\t{key[cut:]}", "".join(f"\\{c}" if c.isalpha() and rng.random() < 0.3 else c for c in key),
        f"  {key}", key.lower(), key.upper(), f"{key}\\ ", f"{key[:-1]}\\u{ord(key[-1]):04X}", f"\\\n{key}",
    ]
    return rng.choice(ways)


def body(rng: random.Random, server: str) -> bytes:
    black = BROKER_BLACK if server == "broker" else NAMESRV_BLACK
    if rng.random() < 0.15:
        return "".join(rng.choice(VALUE_PIECES + SEPARATORS + black) for _ in range(rng.randint(1, 12))).encode()
    lines = []
    for _ in range(rng.randint(1, 5)):
        key = rng.choice(black) if rng.random() < 0.5 else rng.choice(ORDINARY[server])
        value = "".join(rng.choice(VALUE_PIECES) for _ in range(rng.randint(0, 5)))
        lines.append(spell(rng, key) + rng.choice(SEPARATORS) + value + rng.choice(LINE_ENDS))
    return "".join(lines).encode()


class Server:
    """One server under this mode: its address, config file, and what its black-listed keys must stay."""

    def __init__(self, name: str, addr: str, path: Path) -> None:
        self.name, self.addr, self.path = name, addr, path
        self.black = BROKER_BLACK if name == "broker" else NAMESRV_BLACK
        self.update = RequestCode.UPDATE_BROKER_CONFIG if name == "broker" else RequestCode.UPDATE_NAMESRV_CONFIG
        self.get = RequestCode.GET_BROKER_CONFIG if name == "broker" else RequestCode.GET_NAMESRV_CONFIG
        self.expected: dict[str, dict[str, str | None]] = {}
        self.recent: deque[bytes] = deque(maxlen=5)

    def _restart_view(self) -> dict[str, str]:
        if self.name == "broker":
            return BrokerConfig.load(str(self.path)).props
        return NamesrvConfig.from_file(self.path).to_properties()

    async def views(self, client: BrokerTestClient) -> dict[str, dict[str, str | None]]:
        """The black-listed keys in memory (as the server answers), in its file, and after a restart."""
        answer = await client.invoke(self.get)
        memory = properties.loads((answer.body or b"").decode())
        views: dict[str, dict[str, Any]] = {"memory": memory}
        try:
            views["file"] = properties.load_file(self.path)
            views["restart"] = self._restart_view()
        except Exception as exc:  # a file that no longer parses is a finding as well
            views["file"] = views["restart"] = {"(unreadable)": repr(exc)}
        return {where: {k: v.get(k) for k in [*self.black, "(unreadable)"] if k in v} for where, v in views.items()}

    async def start(self, client: BrokerTestClient) -> None:
        """One ordinary update first, so that the file holds the whole configuration from here on."""
        first = b"fileReservedTime=72" if self.name == "broker" else b"orderMessageEnable=false"
        await client.invoke(self.update, None, first)
        self.expected = await self.views(client)


async def run(servers: list[Server], seconds: float, rng: random.Random, findings: dict[str, dict[str, Any]],
              out: Path) -> dict[str, Any]:
    """Send bodies to the servers in turn for ``seconds``, checking after each; returns the counts."""
    import json

    counts: dict[str, Any] = {"bodies": 0, "answers": {}, "changed": 0}
    end = time.monotonic() + seconds
    async with broker_client(servers[0].addr) as first, broker_client(servers[-1].addr) as second:
        clients = {servers[0].name: first, servers[-1].name: second}
        for server in servers:
            await server.start(clients[server.name])
        while time.monotonic() < end:
            server = rng.choice(servers)
            sent = body(rng, server.name)
            server.recent.append(sent)
            answer = await clients[server.name].invoke(server.update, None, sent)
            counts["bodies"] += 1
            code = f"{server.name} {int(answer.code)}"
            counts["answers"][code] = counts["answers"].get(code, 0) + 1
            now = await server.views(clients[server.name])
            if now == server.expected:
                continue
            counts["changed"] += 1
            for where, keys in now.items():
                for key in keys.keys() | server.expected[where].keys():
                    if keys.get(key) == server.expected[where].get(key):
                        continue
                    name = f"config-injection: {server.name} {where} {key}"
                    if name not in findings:
                        bodies = [b.decode("utf-8", "replace") for b in server.recent]
                        finding = {"key": name, "count": 0, "was": server.expected[where].get(key),
                                   "now": keys.get(key), "bodies": bodies}
                        findings[name] = finding
                        (out / f"finding-{len(findings):03d}.json").write_text(json.dumps(finding, indent=1))
                        print(f"FINDING {name}: {finding['was']!r} -> {finding['now']!r} after {sent!r}", flush=True)
                    findings[name]["count"] += 1
            server.expected = now  # report each change once, then watch from there
    return counts
