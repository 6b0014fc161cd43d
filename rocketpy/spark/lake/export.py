"""Exporting a store or captures into a lake: plan on the driver, decode and write in the tasks, commit.

The driver lists the files and cuts them with the data sources' own ``partitions()``; only
those (path, start, end) travel to the tasks (:mod:`.tasks`), each writing its own Parquet
parts; the driver then writes the manifest. An export into a lake that already holds the
same sources is incremental: an unchanged file is not read again, a CommitLog file that
grew is read from the end of its last record read before (unless damage followed it:
then whole), and a changed ConsumeQueue, IndexFile or capture is read again whole, with the
files sharing a part with it.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._files import (
    commitlog_files,
    consumequeue_files,
    file_size,
    index_files,
    pcap_files,
)
from .store import LakeDir, file_stat
from .tables import PCAP_TABLES, STORE_TABLES, message_columns
from .tasks import Target, Task, run_task

# Measured on a 2 GiB store on 2 cores (tools/bench/bench_spark.py --split-size): 512 MiB splits beat
# 128 MiB ones, a task's fixed cost (a Python worker, imports, a Parquet writer) being worth 30-60 MiB of
# decoding.
DEFAULT_SPLIT = 512 << 20

KIND_TABLES = {
    "commitlog": ("messages", "damage"),
    "consumequeue": ("consume_queues",),
    "index": ("index_entries",),
    "pcap": PCAP_TABLES,
}
PCAP_OPTIONS = {"explodemessages": "true", "hastream": "true"}

Runner = Callable[[list[Task], Target, Callable[[int, int], None] | None], list[dict[str, Any]]]


@dataclass
class ExportOptions:
    split_size: int = DEFAULT_SPLIT
    columns: str = "all"  # the messages table's: all, no-bodies, header
    compression: str = "zstd"
    partition_by: str | None = None  # topic or date
    full: bool = False  # read everything again, whatever the lake holds

    def layout(self) -> dict[str, Any]:
        """What parts written under these options share: an export with other ones starts over."""
        return {"columns": self.columns, "compression": self.compression, "partition_by": self.partition_by}


@dataclass
class ExportResult:
    lake: str
    mode: str  # full, incremental
    tasks: int
    files_read: int
    bytes_read: int  # of the source files' splits decoded (what an incremental export saves)
    rows: dict[str, int] = field(default_factory=dict)  # rows written per table in this export
    parts: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # the driver's own (tasks run elsewhere under Spark)
    # where the time went: planning, running the tasks, committing (seconds, on the driver)
    phases: dict[str, float] = field(default_factory=dict)
    # per task: kind, bytes, and start/end (epoch seconds), CPU seconds and pid of its process
    task_times: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def run_in_process(
    tasks: list[Task], target: Target, progress: Callable[[int, int], None] | None = None
) -> list[dict[str, Any]]:
    """Run the tasks one after another in this process (no Spark: small inputs, tests, the baseline)."""
    out = []
    for i, task in enumerate(tasks):
        out.append(run_task(task, target))
        if progress is not None:
            progress(i + 1, len(tasks))
    return out


# CPU per byte of each kind of task, relative to a CommitLog split's (measured on the 2 GiB store of
# tools/bench/bench_spark.py): a ConsumeQueue or IndexFile byte costs 2.5-3 CommitLog bytes.
COST_PER_BYTE = {"commitlog": 1.0, "consumequeue": 2.5, "index": 3.0, "pcap": 4.0}

# Kinds a driver may decode itself while the Spark job runs: their tasks are small, and a
# Spark task's fixed cost (and the wave it adds at the end of the job) is worth more.
DRIVER_KINDS = ("consumequeue", "index")


def task_cost(task: Task) -> float:
    """What ``task`` is expected to take, in CommitLog bytes' worth of CPU."""
    return task.weight * COST_PER_BYTE.get(task.kind, 1.0)


def share_with_driver(tasks: Sequence[Task], slots: int) -> tuple[list[Task], list[Task]]:
    """(tasks the driver runs, tasks for Spark): the driver takes the smallest ConsumeQueue and
    IndexFile tasks up to a fair share of the work (as if it were one more slot), so it works
    while it would only wait, and the job does not end with a wave of small tasks on a few
    slots while the others idle. In local mode the OS shares the cores between the driver and
    the workers: the work ends about when it would on perfectly balanced slots."""
    budget = sum(task_cost(t) for t in tasks) / (slots + 1)
    driver: list[Task] = []
    used = 0.0
    for task in sorted((t for t in tasks if t.kind in DRIVER_KINDS), key=task_cost):
        if used + task_cost(task) > budget:
            break
        driver.append(task)
        used += task_cost(task)
    taken = {t.seq for t in driver}
    return driver, [t for t in tasks if t.seq not in taken]


def spark_runner(spark: Any, driver_share: bool = True) -> Runner:
    """Run the tasks as one Spark job, one task each, costliest first; results are collected.

    With ``driver_share``, the driver runs its share of the small tasks (:func:`share_with_driver`)
    in a thread meanwhile (the thread mostly holds the GIL, the collecting thread waits on a socket)."""

    def run(
        tasks: list[Task], target: Target, progress: Callable[[int, int], None] | None = None
    ) -> list[dict[str, Any]]:
        import functools
        from concurrent.futures import ThreadPoolExecutor

        if not tasks:
            return []
        sc = spark.sparkContext
        local, remote = share_with_driver(tasks, sc.defaultParallelism) if driver_share else ([], list(tasks))
        with ThreadPoolExecutor(1, thread_name_prefix="lake-driver-tasks") as pool:
            on_driver = pool.submit(run_in_process, local, target)
            if not remote:
                out = on_driver.result()
                if progress is not None:
                    progress(len(tasks), len(tasks))
                return out
            ordered = sorted(remote, key=lambda t: -task_cost(t))
            rdd = sc.parallelize(ordered, len(ordered)).map(functools.partial(run_task, target=target))
            if progress is None:
                return list(rdd.collect()) + on_driver.result()
            done = threading.Event()
            watcher = threading.Thread(target=_watch, args=(sc, len(tasks), progress, done), daemon=True)
            watcher.start()
            try:
                return list(rdd.collect()) + on_driver.result()
            finally:
                done.set()
                watcher.join()
                progress(len(tasks), len(tasks))

    return run


def _watch(sc: Any, total: int, progress: Callable[[int, int], None], done: threading.Event) -> None:
    """Report finished tasks while the export's job runs (Spark's status tracker, polled)."""
    tracker = sc.statusTracker()
    last = -1
    while not done.wait(0.5):
        finished = 0
        for stage in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage)
            if info is not None:
                finished += info.numCompletedTasks
        if finished != last:
            progress(finished, total)
            last = finished


def terminal_progress(label: str) -> Callable[[int, int], None] | None:
    """Per-task progress on stderr when it is a terminal; None (silence) when piped."""
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        end = "\n" if done >= total else ""
        sys.stderr.write(f"\r{label}: {done}/{total} tasks{end}")
        sys.stderr.flush()

    return show


# -- planning ----------------------------------------------------------------------------------


@dataclass
class _Plan:
    tasks: list[Task] = field(default_factory=list)
    kept: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # table -> parts still valid
    sources: dict[str, dict[str, Any]] = field(default_factory=dict)  # path -> what the manifest says
    resumed: dict[str, int] = field(default_factory=dict)  # CommitLog file -> offset read from


def _old_parts(old: dict[str, Any] | None, tables: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    if old is None:
        return {t: [] for t in tables}
    return {t: list(old.get("tables", {}).get(t, {}).get("parts", [])) for t in tables}


def _changed(old: dict[str, Any] | None, path: str, stat: tuple[int, int]) -> dict[str, Any] | None:
    """The manifest's entry of ``path`` if the file is as it was then; None if new or changed."""
    entry = None if old is None else old.get("sources", {}).get(path)
    if entry is not None and (entry.get("size"), entry.get("mtime_ns")) == stat:
        return entry
    return None


def _weight(partition: Any) -> int:
    size = file_size(partition.path)
    end = size if partition.end is None else min(partition.end, size)
    return max(0, end - partition.start)


def _group(kind: str, options: dict[str, str], partitions: Sequence[Any], limit: int, plan: _Plan) -> None:
    """Tasks of whole partitions of about ``limit`` bytes each (small files share a task: a
    Spark task's fixed cost is more than decoding one ConsumeQueue file takes)."""
    held: list[Any] = []
    weight = 0
    for p in partitions:
        w = _weight(p)
        if held and weight + w > limit:
            plan.tasks.append(Task(len(plan.tasks), kind, options, held, weight))
            held, weight = [], 0
        held.append(p)
        weight += w
    if held:
        plan.tasks.append(Task(len(plan.tasks), kind, options, held, weight))


def _plan_whole_files(
    kind: str,
    files: list[str],
    reader: Any,
    old: dict[str, Any] | None,
    opts: ExportOptions,
    plan: _Plan,
    options: dict[str, str],
) -> None:
    """ConsumeQueue, IndexFile and capture files: unchanged ones keep their parts; a part holding
    a changed or vanished file goes, and its files still there are read again."""
    stats = {p: file_stat(p) for p in files}
    changed = {p for p in files if _changed(old, p, stats[p]) is None}
    old_parts = _old_parts(old, KIND_TABLES[kind])
    old_kind = {p for p, e in (old or {}).get("sources", {}).items() if e.get("kind") == kind}
    vanished = old_kind - set(files)
    again: set[str] = set(changed)
    for table, parts in old_parts.items():
        keep = []
        for part in parts:
            if set(part.get("sources", [])) & (changed | vanished):
                again.update(s for s in part.get("sources", []) if s in stats)
            else:
                keep.append(part)
        plan.kept[table] = keep
    # a part kept must not hold a file read again (it would be there twice)
    for table in plan.kept:
        plan.kept[table] = [p for p in plan.kept[table] if not set(p.get("sources", [])) & again]
    for p in files:
        plan.sources[p] = {"kind": kind, "size": stats[p][0], "mtime_ns": stats[p][1]}
    partitions = [p for p in reader.partitions() if p.path in again]
    _group(kind, options, partitions, opts.split_size, plan)


def _plan_commitlog(store: str, old: dict[str, Any] | None, opts: ExportOptions, plan: _Plan) -> None:
    from ..sources import FilePartition, _CommitLogReader

    files = commitlog_files([store])
    old_parts = _old_parts(old, KIND_TABLES["commitlog"])
    drop: set[str] = set(e for e, v in (old or {}).get("sources", {}).items() if v.get("kind") == "commitlog")
    todo: set[str] = set()
    for path, base in files:
        stat = file_stat(path)
        drop.discard(path)
        same = _changed(old, path, stat)
        entry = {"kind": "commitlog", "base": base, "size": stat[0], "mtime_ns": stat[1]}
        if same is not None:
            plan.sources[path] = dict(same)
            continue
        before = None if old is None else old.get("sources", {}).get(path)
        if before is not None and before.get("resume") is not None:
            plan.resumed[path] = int(before["resume"]) - base  # it grew: read on from its last record
        elif before is not None:
            drop.add(path)  # damage at its end when read before: read it whole again
        plan.sources[path] = entry
        todo.add(path)
    for table, parts in old_parts.items():
        plan.kept[table] = [p for p in parts if not set(p.get("sources", [])) & drop]
    options = {"path": store, "splitsize": str(opts.split_size)}
    reader = _CommitLogReader(options, None, resume=plan.resumed)
    for p in reader.partitions():
        if isinstance(p, FilePartition) and p.path in todo:
            plan.tasks.append(Task(len(plan.tasks), "commitlog", options, [p], _weight(p)))


def _resume_points(plan: _Plan, results: list[dict[str, Any]]) -> None:
    """Where each CommitLog file read now can be resumed next time: the end of its last
    message record, unless a corrupt stretch follows it (then the file is read whole again)."""
    ends: dict[str, int | None] = {}
    corrupt: dict[str, int] = {}
    for result in results:
        if result["kind"] != "commitlog":
            continue
        for seen in result["read"]:
            path = seen["path"]
            if seen.get("msg_end") is not None:
                ends[path] = max(ends.get(path) or 0, seen["msg_end"])
            else:
                ends.setdefault(path, None)
            if seen.get("corrupt_max") is not None:
                corrupt[path] = max(corrupt.get(path, -1), seen["corrupt_max"])
    for path, entry in plan.sources.items():
        if entry.get("kind") != "commitlog" or path not in ends:
            continue
        base = entry["base"]
        end = ends[path]
        if end is None and path in plan.resumed:
            end = base + plan.resumed[path]  # nothing new since
        start = base + plan.resumed.get(path, 0)
        last = end if end is not None else start
        entry["resume"] = last if corrupt.get(path, -1) < last else None


# -- the export ----------------------------------------------------------------------------


def _commit(
    lake: LakeDir,
    old: dict[str, Any] | None,
    plan: _Plan,
    results: list[dict[str, Any]],
    tables: Sequence[str],
    kinds: Sequence[str],
    opts: ExportOptions,
    inputs: dict[str, Any],
    result: ExportResult,
) -> None:
    manifest: dict[str, Any] = {} if old is None else dict(old)
    all_tables = dict(manifest.get("tables", {}))
    for name in tables:
        parts = list(plan.kept.get(name, []))
        for res in results:
            read = sorted({r["path"] for r in res["read"]})
            for part in res["parts"]:
                if part["table"] == name:
                    parts.append({**{k: v for k, v in part.items() if k != "table"}, "sources": read})
                    result.rows[name] = result.rows.get(name, 0) + part["rows"]
                    result.parts += 1
        parts.sort(key=lambda p: (p["order"][0] is None, p["order"][0] or 0, p["path"]))
        all_tables[name] = {"columns": _columns_of(name, opts), "parts": parts}
    sources = {p: e for p, e in manifest.get("sources", {}).items() if e.get("kind") not in kinds}
    sources.update(plan.sources)
    history = list(manifest.get("exports", []))[-49:]
    history.append(
        {
            "at": time.time(),
            "mode": result.mode,
            "tasks": result.tasks,
            "bytes_read": result.bytes_read,
            "rows": result.rows,
            **inputs,
        }
    )
    manifest.update(tables=all_tables, sources=sources, exports=history, layout=opts.layout())
    manifest.setdefault("inputs", {}).update(inputs)
    lake.commit(manifest)


def _columns_of(table: str, opts: ExportOptions) -> list[list[str]]:
    from .tables import TABLES

    cols = message_columns(opts.columns) if table == "messages" else TABLES[table].columns
    return [[n, k] for n, k in cols]


def _export(
    lake: LakeDir,
    kinds: Sequence[str],
    tables: Sequence[str],
    plan_fn: Callable[[dict[str, Any] | None, _Plan], None],
    runner: Runner | None,
    opts: ExportOptions,
    inputs: dict[str, Any],
    progress: Callable[[int, int], None] | None,
) -> ExportResult:
    t0, c0 = time.perf_counter(), time.process_time()
    old = lake.read_manifest()
    if old is not None and (opts.full or old.get("layout", opts.layout()) != opts.layout()):
        # start over for these tables; others' parts (and sources) stay
        old = dict(old, tables={t: v for t, v in old.get("tables", {}).items() if t not in tables})
        old["sources"] = {p: e for p, e in old.get("sources", {}).items() if e.get("kind") not in kinds}
    had = old is not None and any(e.get("kind") in kinds for e in old.get("sources", {}).values())
    plan = _Plan()
    plan_fn(old, plan)
    t_plan = time.perf_counter()
    target = Target(
        lake,
        opts.compression,
        opts.partition_by,
        None if opts.columns == "all" else message_columns(opts.columns),
    )
    results = (runner or run_in_process)(plan.tasks, target, progress)
    t_run = time.perf_counter()
    _resume_points(plan, results)
    result = ExportResult(
        lake=lake.root,
        mode="incremental" if had else "full",
        tasks=len(plan.tasks),
        files_read=len({p.path for t in plan.tasks for p in t.partitions}),
        bytes_read=sum(t.weight for t in plan.tasks),
    )
    _commit(lake, old, plan, results, tables, kinds, opts, inputs, result)
    result.seconds = time.perf_counter() - t0
    result.phases = {"plan": t_plan - t0, "tasks": t_run - t_plan, "commit": t0 + result.seconds - t_run}
    weights = {t.seq: t.weight for t in plan.tasks}
    result.task_times = [
        {"seq": r["seq"], "kind": r["kind"], "bytes": weights.get(r["seq"], 0), **r.get("timing", {})} for r in results
    ]
    result.cpu_seconds = time.process_time() - c0
    return result


def _lake_dir(lake: str | LakeDir) -> LakeDir:
    return lake if isinstance(lake, LakeDir) else LakeDir(lake)


def _abs(path: str) -> str:
    return path if "://" in path else os.path.abspath(path)


def export_store(
    store: str,
    lake: str | LakeDir,
    runner: Runner | None = None,
    options: ExportOptions | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ExportResult:
    """Export a broker store directory (CommitLog, ConsumeQueues, IndexFiles) into ``lake``.

    ``runner``: :func:`spark_runner` (spark) or None to run in this process.
    """
    from ..sources import _ConsumeQueueReader, _IndexReader

    opts = options or ExportOptions()
    store = _abs(store)
    lake_dir = _lake_dir(lake)

    def plan_fn(old: dict[str, Any] | None, plan: _Plan) -> None:
        _plan_commitlog(store, old, opts, plan)
        cq_opts = {"path": store, "splitsize": str(opts.split_size)}
        cq_files = [f for f, _, _, _ in consumequeue_files([store])] if _has(store, "consumequeue") else []
        _plan_whole_files("consumequeue", cq_files, _ConsumeQueueReader(cq_opts), old, opts, plan, cq_opts)
        ix_files = index_files([store]) if _has(store, "index") else []
        _plan_whole_files("index", ix_files, _IndexReader(cq_opts), old, opts, plan, cq_opts)

    return _export(
        lake_dir,
        ("commitlog", "consumequeue", "index"),
        STORE_TABLES,
        plan_fn,
        runner,
        opts,
        {"store": store},
        progress,
    )


def _has(store: str, name: str) -> bool:
    from .._files import _isdir

    return _isdir(os.path.join(store, name) if "://" not in store else store.rstrip("/") + "/" + name)


def export_pcaps(
    paths: Sequence[str],
    lake: str | LakeDir,
    runner: Runner | None = None,
    options: ExportOptions | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ExportResult:
    """Export captures (files or directories of them) into ``lake``: the ``frames`` and ``ha`` tables."""
    from ..sources import _PcapReader

    opts = options or ExportOptions()
    given = [_abs(p) for p in paths]
    lake_dir = _lake_dir(lake)
    files = pcap_files(given)
    pcap_opts = {"paths": json.dumps(given), **PCAP_OPTIONS}

    def plan_fn(old: dict[str, Any] | None, plan: _Plan) -> None:
        _plan_whole_files("pcap", files, _PcapReader(pcap_opts), old, opts, plan, pcap_opts)

    return _export(lake_dir, ("pcap",), PCAP_TABLES, plan_fn, runner, opts, {"captures": given}, progress)
