"""Frames/s to decode and encode a SEND_MESSAGE_V2 (1 KiB body) and a PULL response with 32 messages.

Run: python tools/bench/bench_codecs.py [--seconds S]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from rocketpy.codecs import RemotingCommand, RequestCode, SerializeType
from rocketpy.codecs.headers import PullMessageResponseHeader, SendMessageRequestHeaderV2
from rocketpy.codecs.message import MessageExt, decode_messages, encode_message, properties_to_string


def _send_frame(serialize_type: SerializeType) -> bytes:
    header = SendMessageRequestHeaderV2(
        producer_group="bench_PG",
        topic="bench_T",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=3,
        sys_flag=0,
        born_timestamp=1795299411940,
        flag=0,
        properties=properties_to_string(
            {"KEYS": "key-0", "UNIQ_KEY": "FD00000000000000000000000000000273F05FFD2B276BC71FE40000", "WAIT": "true",
             "TAGS": "TagA"}
        ),
        reconsume_times=0,
        unit_mode=False,
        batch=False,
        broker_name="broker-a",
    )
    return RemotingCommand.request(
        RequestCode.SEND_MESSAGE_V2, header, b"x" * 1024, opaque=6, serialize_type=serialize_type
    ).encode()


def _pull_frame() -> bytes:
    records = []
    for i in range(32):
        msg = MessageExt(
            topic="bench_T",
            body=b"y" * 1024,
            properties={"KEYS": f"key-{i}", "UNIQ_KEY": f"{i:056X}", "TAGS": "TagA", "WAIT": "true"},
            queue_id=1,
            queue_offset=i,
            commit_log_offset=i * 1200,
            born_host="127.0.0.1:40000",
            store_host="127.0.0.1:10911",
            born_timestamp=1795299411940,
            store_timestamp=1795299411941,
        )
        records.append(encode_message(msg))
    header = PullMessageResponseHeader(suggest_which_broker_id=0, next_begin_offset=32, min_offset=0, max_offset=32)
    req = RemotingCommand(code=RequestCode.PULL_MESSAGE, opaque=9)
    return req.response(0, header, b"".join(records)).encode()


def _rate(fn: Callable[[], object], seconds: float) -> float:
    n = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(200):
            fn()
        n += 200
        now = time.perf_counter()
        if now >= deadline:
            return n / (now - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=1.0)
    args = ap.parse_args()
    cases: dict[str, Callable[[], object]] = {}
    for st in (SerializeType.JSON, SerializeType.ROCKETMQ):
        raw = _send_frame(st)
        cmd = RemotingCommand.decode(raw)
        cases[f"SEND_MESSAGE_V2 {st.name} decode frame"] = lambda raw=raw: RemotingCommand.decode(raw)
        cases[f"SEND_MESSAGE_V2 {st.name} decode frame+header"] = lambda raw=raw: RemotingCommand.decode(raw).header
        cases[f"SEND_MESSAGE_V2 {st.name} encode"] = cmd.encode
    pull = _pull_frame()
    pull_cmd = RemotingCommand.decode(pull)
    cases["PULL response (32 msgs) decode frame"] = lambda: RemotingCommand.decode(pull)
    cases["PULL response (32 msgs) decode frame+messages"] = lambda: decode_messages(RemotingCommand.decode(pull).body)
    cases["PULL response (32 msgs) encode"] = pull_cmd.encode
    width = max(map(len, cases))
    for name, fn in cases.items():
        print(f"{name:<{width}}  {_rate(fn, args.seconds):>12,.0f} frames/s")


if __name__ == "__main__":
    main()
