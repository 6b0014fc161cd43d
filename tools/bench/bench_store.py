"""Store throughput: appends/s and MB/s of 1 KiB messages, ASYNC_FLUSH and SYNC_FLUSH
(group commit from trio, N concurrent senders), and reads by queue offset.

Everything is written under a temporary directory that is removed afterwards.
Run: python tools/bench/bench_store.py [--messages N] [--senders S] [--dir PATH]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import trio

from rocketpy.store import (
    FlushDiskType,
    GetMessageStatus,
    MessageExtBrokerInner,
    MessageStore,
    MessageStoreConfig,
    PutMessageStatus,
)
from rocketpy.store.services import GroupCommitService

BODY = b"x" * 1024
QUEUES = 4


def _config(root: str, flush: FlushDiskType) -> MessageStoreConfig:
    return MessageStoreConfig(
        store_path_root_dir=root,
        mapped_file_size_commit_log=64 * 1024 * 1024,
        mapped_file_size_consume_queue=300_000 * 20,
        max_hash_slot_num=500_000,
        max_index_num=2_000_000,
        flush_disk_type=flush,
    )


def _msg(i: int) -> MessageExtBrokerInner:
    return MessageExtBrokerInner(
        topic="bench_T",
        queue_id=i % QUEUES,
        body=BODY,
        properties={"KEYS": f"key-{i}", "UNIQ_KEY": f"{i:032X}", "CLUSTER": "DefaultCluster", "TAGS": "TagA"},
        born_timestamp=1795299411940,
        born_host="127.0.0.1:40000",
        store_host="127.0.0.1:10911",
    )


def _report(label: str, n: int, nbytes: int, seconds: float) -> None:
    print(f"{label:<44} {n / seconds:>10,.0f} msg/s {nbytes / seconds / 1e6:>8.1f} MB/s  ({n} in {seconds:.2f}s)")


def bench_async(root: str, n: int) -> None:
    with MessageStore(_config(root, FlushDiskType.ASYNC_FLUSH)) as store:
        msgs = [_msg(i) for i in range(n)]
        t = time.perf_counter()
        written = 0
        last_flush = t
        for m in msgs:
            r = store.put_message(m)
            written += r.append.wrote_bytes  # type: ignore[union-attr]
            # What FlushRealTimeService would do every flushIntervalCommitLog (500 ms).
            if (now := time.perf_counter()) - last_flush >= 0.5:
                store.flush_commitlog()
                last_flush = now
        store.flush()
        _report("put_message, ASYNC_FLUSH (index on)", n, written, time.perf_counter() - t)

        t = time.perf_counter()
        got = read = 0
        for q in range(QUEUES):
            offset = 0
            while True:
                res = store.get_message("bench_T", q, offset, 32)
                assert res is not None
                if res.status is not GetMessageStatus.FOUND:
                    break
                got += res.message_count
                read += res.buffer_total_size
                offset = res.next_begin_offset
        assert got == n
        _report("get_message by queue offset (32/pull)", got, read, time.perf_counter() - t)


def bench_sync(root: str, n: int, senders: int) -> None:
    cfg = _config(root, FlushDiskType.SYNC_FLUSH)
    with MessageStore(cfg) as store:
        group = GroupCommitService(store)
        written = 0
        per_sender = n // senders

        async def sender(k: int) -> None:
            nonlocal written
            for i in range(per_sender):
                r = store.put_message(_msg(k * per_sender + i))
                assert (await group.wait_flushed(r.flush_offset)) is PutMessageStatus.PUT_OK
                written += r.append.wrote_bytes  # type: ignore[union-attr]

        async def main() -> float:
            async with trio.open_nursery() as nursery:
                await nursery.start(group.run)
                t = time.perf_counter()
                async with trio.open_nursery() as inner:
                    for k in range(senders):
                        inner.start_soon(sender, k)
                elapsed = time.perf_counter() - t
                nursery.cancel_scope.cancel()
            return elapsed

        elapsed = trio.run(main)
        total = per_sender * senders
        _report(f"put + wait_flushed, SYNC_FLUSH, {senders} senders", total, written, elapsed)
        print(f"{'':<44} {group.rounds} msyncs, {total / max(group.rounds, 1):.1f} messages per msync")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--messages", type=int, default=50_000)
    ap.add_argument("--sync-messages", type=int, default=5_000)
    ap.add_argument("--senders", type=int, default=64)
    ap.add_argument("--dir", help="parent directory for the temporary stores (default: the system temp dir)")
    args = ap.parse_args()
    base = tempfile.mkdtemp(prefix="bench_store_", dir=args.dir)
    try:
        print(f"1 KiB bodies, {QUEUES} queues, stores under {base}")
        bench_async(os.path.join(base, "async"), args.messages)
        bench_sync(os.path.join(base, "sync"), args.sync_messages, args.senders)
        bench_sync(os.path.join(base, "sync1"), max(args.sync_messages // 10, 100), 1)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
