"""Header-value mutation of real requests: the official 4.9.8 client's frames from the golden captures
(protocol/golden/captures) with the values of their extFields replaced by hostile ones of the field's
Java type, so that the request gets as far as the handler with one value wrong.

Each mutated request changes one to three fields: numbers at and beyond the Java bounds (int, long),
negative, huge, in forms Java's parse refuses and Python's ``int()`` takes (``" 1"``, ``"1_0"``,
non-ASCII digits), non-numeric; booleans in every spelling; a @CFNotNull field left out; and for
strings the empty one, unicode, control characters, long ones, names of other topics and groups.
"""

from __future__ import annotations

import glob
import os
import random
from dataclasses import dataclass

from rocketpy.codecs import RemotingCommand
from rocketpy.codecs.headers.registry import REQUEST_HEADERS
from rocketpy.sniffer.pcap import read_pcap

#: the golden captures, relative to this file
CAPTURES = os.path.join(os.path.dirname(__file__), "..", "..", "protocol", "golden", "captures")
NAMESRV_PORT = 9876

INT32 = 2**31
INT64 = 2**63
NUMBERS = [
    str(v)
    for v in (INT32 - 1, INT32, -INT32, -INT32 - 1, INT64 - 1, INT64, -INT64, -INT64 - 1, 2**64, -(2**64), 0, -1, -2)
] + ["9" * 400, "-" + "9" * 30, "", " 1", "1 ", "+1", "-0", "1_000", "0x10", "1e3", "1.5", "NaN", "\u0661\u0662",
     "\uff11", "1\x00", "abc", "null", "true", "0" * 50 + "7"]
BOOLEANS = ["true", "false", "TRUE", "True", "1", "0", "yes", "", " true", "null", "\u0074rue\u200b"]
STRINGS = ["", " ", "a" * 300, "b" * 70_000, "\u00e9\u4e2d\U0001f600", "\x00\x01\x02", "\ud800".encode(
    "utf-8", "surrogatepass").decode("utf-8", "replace"), "%RETRY%", "%DLQ%x", "TBW102", "SCHEDULE_TOPIC_XXXX",
    "RMQ_SYS_TRANS_HALF_TOPIC", "../../etc/passwd", "a@b", "a\nb=c", "*", "||", "a > ", "{\"a\":", "\\u0000",
    "DefaultCluster", "broker-a", "127.0.0.1:1", "null"]


@dataclass(frozen=True)
class GoldenRequest:
    """One request the official client sent, and whether it went to the NameServer."""

    command: RemotingCommand
    to_namesrv: bool


def load_golden_requests(captures: str = CAPTURES, skip_codes: frozenset[int] = frozenset()) -> list[GoldenRequest]:
    """Every request frame of the captures (none of ``skip_codes``), decoded."""
    found: list[GoldenRequest] = []
    for path in sorted(glob.glob(os.path.join(captures, "*.pcap"))):
        for fr in read_pcap(path):
            cmd = fr.command
            if cmd is None or cmd.is_response or fr.from_server or cmd.code in skip_codes:
                continue
            found.append(GoldenRequest(cmd, fr.dst[1] == NAMESRV_PORT))
    return found


def hostile_value(rng: random.Random, kind: str) -> str:
    """A value for a field of Java type ``kind`` that the field's parse should refuse or that stresses it."""
    kind = kind.lower()
    r = rng.random()
    if kind in ("int", "integer", "long", "double"):
        return rng.choice(NUMBERS) if r < 0.85 else rng.choice(STRINGS)
    if kind == "boolean":
        return rng.choice(BOOLEANS) if r < 0.8 else rng.choice(NUMBERS + STRINGS)
    return rng.choice(STRINGS) if r < 0.8 else rng.choice(NUMBERS)


def mutate_golden(rng: random.Random, golden: GoldenRequest, protect: tuple[str, ...] = ()) -> RemotingCommand:
    """A copy of the golden request with one to three header values made hostile (or left out); values
    naming ``protect`` (the checker's topic and group) are never produced."""
    src = golden.command
    ext = dict(src.ext_fields or {})
    cls = REQUEST_HEADERS.get(src.code)
    kinds = {spec.java_name: spec.kind for spec in cls.fields_spec} if cls is not None else {}
    names = sorted(set(ext) | set(kinds))
    for name in rng.sample(names, min(len(names), rng.randint(1, 3))) if names else ():
        if rng.random() < 0.15:
            ext.pop(name, None)  # a missing (perhaps required) field
        else:
            ext[name] = hostile_value(rng, kinds.get(name, "String"))
    if rng.random() < 0.05:
        ext[rng.choice(STRINGS)[:40]] = rng.choice(NUMBERS)
    for key, value in ext.items():
        if any(p in value for p in protect):
            ext[key] = "other"
    return RemotingCommand(
        code=src.code,
        language=src.language,
        version=src.version,
        opaque=rng.randint(0, 2**31 - 1),
        flag=src.flag,
        remark=src.remark,
        ext_fields=ext,
        body=src.body,
        serialize_type=src.serialize_type,
    )
