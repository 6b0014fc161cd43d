"""``rocketpy store check DIR`` and ``rocketpy store dump DIR``: operator tools, read-only."""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..codecs.errors import CodecError
from ..codecs.message import MessageExt, decode_message
from .check import CheckReport, check_store, open_readonly
from .config import MessageStoreConfig
from .dledger_ledger import DLedgerLedger, find_ledger_dirs
from .walk import CorruptRegion, walk_commitlog, written_end

__all__ = ["add_parsers", "add_store_parser", "message_to_dict"]


def add_store_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``store check`` and ``store dump``."""
    store = subparsers.add_parser("store", help="inspect a RocketMQ store directory (read-only)")
    sub = store.add_subparsers(dest="store_command", required=True)

    p = sub.add_parser("check", help="verify CommitLog, ConsumeQueues, index, checkpoint and config files")
    p.add_argument("dir", help="store root (storePathRootDir)")
    p.add_argument("--config", help="broker .conf / properties file (mappedFileSize*, maxHashSlotNum, ...)")
    p.add_argument("--no-crc", action="store_true", help="skip body CRC checks")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_cmd_check)

    p = sub.add_parser("dump", help="print every CommitLog record in order")
    p.add_argument("dir", help="store root (storePathRootDir), or a commitlog directory")
    p.add_argument("--topic", help="only records of this topic")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.add_argument(
        "--body",
        choices=["auto", "text", "base64"],
        default="auto",
        help="body as UTF-8 text, base64, or text when it decodes (default)",
    )
    p.add_argument("--decompress", action="store_true", help="inflate compressed bodies")
    p.add_argument("--limit", type=int, default=0, help="stop after this many records")
    p.set_defaults(func=_cmd_dump)


add_parsers = add_store_parser  # the name rocketpy.cli looks for


# -- check ---------------------------------------------------------------------------------


def _load_config(path: str | None, root: str) -> MessageStoreConfig | None:
    if not path:
        return None
    from ..javacompat.properties import load_file  # as Java reads it: ISO-8859-1, \uXXXX escapes

    return MessageStoreConfig.from_properties(load_file(path), store_path_root_dir=root, store_path_commit_log=None)


#: what a store root holds (Java creates these on first start)
_STORE_ENTRIES = ("commitlog", "consumequeue", "index", "checkpoint", "config", "abort", "lock")


def is_store(root: str) -> bool:
    return any(os.path.exists(os.path.join(root, e)) for e in _STORE_ENTRIES) or bool(find_ledger_dirs(root))


def _not_a_store(command: str, path: str) -> int:
    if not os.path.isdir(path):
        print(f"rocketpy store {command}: not a directory: {path}", file=sys.stderr)
    else:
        print(f"rocketpy store {command}: not a RocketMQ store (no commitlog, consumequeue or checkpoint): {path}",
              file=sys.stderr)
    return 2


@contextmanager
def _progress_bar(what: str) -> Iterator[Callable[[int, int], None] | None]:
    """A transient bar on stderr when it is a terminal (files done / files); None otherwise."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(what, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


def _cmd_check(args: argparse.Namespace) -> int:
    if not os.path.isdir(args.dir) or not is_store(args.dir):
        return _not_a_store("check", args.dir)
    try:
        config = _load_config(args.config, args.dir)
    except (OSError, ValueError) as exc:  # unreadable, or not a properties file (ConfigError is a ValueError)
        print(f"rocketpy store check: cannot read --config {args.config}: {exc}", file=sys.stderr)
        return 2
    with _progress_bar("checking CommitLog files") as progress:
        report = check_store(args.dir, config, check_crc=not args.no_crc, progress=progress)
    if args.json:
        print(json.dumps(_report_json(report), indent=1))
    else:
        _print_report(report)
    return 0 if report.ok else 1


def _typed(value: object) -> object:
    return value if isinstance(value, (bool, int, float, str)) or value is None else str(value)


def _report_json(report: CheckReport) -> dict[str, Any]:
    return {
        "root": report.root,
        "ok": report.ok,
        "cleanShutdown": report.clean_shutdown,
        "inUse": report.in_use,
        "errors": report.errors,
        "warnings": report.warnings,
        "sections": {s.title: {k: _typed(v) for k, v in s.facts.items()} for s in report.sections},
    }


def _print_plain(report: CheckReport) -> None:
    """The report off a terminal: plain lines, no box characters."""
    out = [f"Store {report.root}"]
    for sec in report.sections:
        out.append("")
        out.append(sec.title)
        out += [f"  {k}: {v}" for k, v in sec.facts.items()]
        out += [f"  warning: {w}" for w in sec.warnings]
        out += [f"  ERROR: {e}" for e in sec.errors]
    shutdown = "clean shutdown" if report.clean_shutdown else "NOT shut down cleanly (abort file present)"
    out.append("")
    if report.ok:
        out.append(f"OK: {shutdown}, {len(report.warnings)} warning(s)")
    else:
        out.append(f"DAMAGED: {len(report.errors)} error(s), {len(report.warnings)} warning(s); {shutdown}")
    sys.stdout.write("\n".join(out) + "\n")


def _print_report(report: CheckReport) -> None:
    if not sys.stdout.isatty():
        _print_plain(report)
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    # everything printed here comes from the store (paths, topic names): data, never markup
    console = Console(markup=False, highlight=False, width=None if sys.stdout.isatty() else 250)
    console.print(Text.assemble(("Store", "bold"), " ", report.root))
    for sec in report.sections:
        table = Table(title=sec.title, show_header=False, title_justify="left")
        table.add_column("fact", style="cyan")
        table.add_column("value")
        for k, v in sec.facts.items():
            table.add_row(Text(k), Text(str(v)))
        for w in sec.warnings:
            table.add_row(Text("warning", "yellow"), Text(w))
        for e in sec.errors:
            table.add_row(Text("ERROR", "red"), Text(e))
        console.print(table)
    shutdown = "clean shutdown" if report.clean_shutdown else "NOT shut down cleanly (abort file present)"
    if report.ok:
        console.print(Text.assemble(("OK", "green"), f": {shutdown}, {len(report.warnings)} warning(s)"))
    else:
        console.print(Text.assemble(
            ("DAMAGED", "red"), f": {len(report.errors)} error(s), {len(report.warnings)} warning(s); {shutdown}"
        ))


# -- dump ----------------------------------------------------------------------------------


def message_to_dict(msg: MessageExt, body_mode: str = "auto", decompress: bool = False) -> dict[str, Any]:
    """One record as a JSON-ready dict (names as in Java's MessageExt)."""
    body = msg.body
    if decompress and msg.is_compressed:
        try:
            body = msg.decompressed_body()
        except CodecError:
            pass
    d: dict[str, Any] = {
        "topic": msg.topic,
        "queueId": msg.queue_id,
        "queueOffset": msg.queue_offset,
        "commitLogOffset": msg.commit_log_offset,
        "storeSize": msg.store_size,
        "offsetMsgId": msg.offset_msg_id,
        "uniqKey": msg.uniq_key,
        "tags": msg.tags,
        "keys": msg.keys_string,
        "properties": msg.properties,
        "flag": msg.flag,
        "sysFlag": msg.sys_flag,
        "bodyCRC": msg.body_crc,
        "bornTimestamp": msg.born_timestamp,
        "bornHost": msg.born_host,
        "storeTimestamp": msg.store_timestamp,
        "storeHost": msg.store_host,
        "reconsumeTimes": msg.reconsume_times,
        "preparedTransactionOffset": msg.prepared_transaction_offset,
    }
    text: str | None = None
    if body_mode in ("auto", "text"):
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            text = body.decode("utf-8", "replace") if body_mode == "text" else None
    if text is not None:
        d["bodyEncoding"] = "utf8"
        d["body"] = text
    else:
        d["bodyEncoding"] = "base64"
        d["body"] = base64.b64encode(body).decode("ascii")
    return d


def _commit_dir(path: str) -> str | None:
    """The CommitLog directory of a store root, or ``path`` itself if it is one; None if neither."""
    sub = os.path.join(path, "commitlog")
    if os.path.isdir(sub):
        return sub
    if any(n.isdigit() for n in os.listdir(path)) or is_store(path):
        return path
    return None


class _Dump:
    """The records to print, in order; damaged regions are reported on stderr and skipped."""

    def __init__(self, commit_dir: str, args: argparse.Namespace) -> None:
        self.commit_dir = commit_dir
        self.args = args
        self.damaged = 0

    def __iter__(self) -> Iterator[MessageExt]:
        names = sorted(f for f in os.listdir(self.commit_dir) if f.isdigit())
        with _progress_bar("reading CommitLog files") as progress:
            yield from self._records(names, progress)

    def _records(self, names: list[str], progress: Callable[[int, int], None] | None) -> Iterator[MessageExt]:
        args, n = self.args, 0
        for i, name in enumerate(names):
            if progress is not None:
                progress(i, len(names))
            path = os.path.join(self.commit_dir, name)
            with open_readonly(path) as buf:
                for item in walk_commitlog(buf, int(name), data_end=written_end(path)):
                    if isinstance(item, CorruptRegion):
                        self.damaged += 1
                        print(f"warning: {name}: damaged region at offset {item.offset} ({item.length} bytes): "
                              f"{item.reason}; skipped", file=sys.stderr, flush=True)
                        continue
                    rec = item[1]
                    if not isinstance(rec, MessageExt) or (args.topic and rec.topic != args.topic):
                        continue
                    yield rec
                    n += 1
                    if args.limit and n >= args.limit:
                        return


def _store_time(ms: int) -> str:
    from datetime import datetime

    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


class _LedgerDump:
    """The message records inside a DLedger member's entries (DLedger mode), in ledger order."""

    def __init__(self, ledgers: list[Any], args: argparse.Namespace) -> None:
        self.ledgers = ledgers
        self.args = args
        self.damaged = 0

    def __iter__(self) -> Iterator[MessageExt]:
        args, n = self.args, 0
        for path in self.ledgers:
            try:
                for entry in DLedgerLedger(path).entries():
                    try:
                        rec = decode_message(entry.body)
                    except CodecError as exc:
                        self.damaged += 1
                        print(f"warning: {path.name}: entry {entry.index} at {entry.pos} is not a message record: "
                              f"{exc}; skipped", file=sys.stderr, flush=True)
                        continue
                    if args.topic and rec.topic != args.topic:
                        continue
                    yield rec
                    n += 1
                    if args.limit and n >= args.limit:
                        return
            except CodecError as exc:
                self.damaged += 1
                print(f"warning: {path.name}: {exc}; the rest of the ledger is skipped", file=sys.stderr, flush=True)


class _DividedDump:
    """A store that was plain before it became a DLedger member (the divided CommitLog): the old CommitLog's
    records, then the ledger's, in offset order."""

    def __init__(self, old: _Dump, ledger: _LedgerDump, args: argparse.Namespace) -> None:
        self.old, self.ledger, self.args = old, ledger, args

    @property
    def damaged(self) -> int:
        return self.old.damaged + self.ledger.damaged

    def __iter__(self) -> Iterator[MessageExt]:
        limit, n = self.args.limit, 0
        for part in (self.old, self.ledger):
            for rec in part:
                yield rec
                n += 1
                if limit and n >= limit:
                    return


def _cmd_dump(args: argparse.Namespace) -> int:
    ledgers = find_ledger_dirs(args.dir) if os.path.isdir(args.dir) else []
    commit_dir = _commit_dir(args.dir) if os.path.isdir(args.dir) else None
    if commit_dir is not None and ledgers and not any(n.isdigit() for n in os.listdir(commit_dir)):
        commit_dir = None  # DLedger mode: the records live in the ledger
    if commit_dir is None and not ledgers:
        return _not_a_store("dump", args.dir)
    dump: _Dump | _LedgerDump | _DividedDump
    if commit_dir is not None and ledgers:
        dump = _DividedDump(_Dump(commit_dir, args), _LedgerDump(ledgers, args), args)
    else:
        dump = _Dump(commit_dir, args) if commit_dir is not None else _LedgerDump(ledgers, args)
    out = sys.stdout
    if args.json:
        for msg in dump:
            out.write(json.dumps(message_to_dict(msg, args.body, args.decompress), ensure_ascii=False))
            out.write("\n")
    else:
        # streamed: one line per record as it is read (a whole-store table would sit in memory)
        row = "{:>12}  {:<23}  {:>4}  {:>8}  {:<21}  {:<12}  {:<16}  {}  {}\n"
        out.write(row.format("offset", "store time", "qid", "qoff", "born host", "tags", "keys", "topic", "body"))
        for msg in dump:
            d = message_to_dict(msg, args.body, args.decompress)
            body = d["body"] if len(d["body"]) <= 60 else d["body"][:57] + "..."
            body = body.replace("\n", "\\n").replace("\r", "\\r")  # one record, one line
            out.write(row.format(
                msg.commit_log_offset, _store_time(msg.store_timestamp), msg.queue_id, msg.queue_offset,
                msg.born_host, msg.tags or "", msg.keys_string or "", msg.topic,
                body if d["bodyEncoding"] == "utf8" else f"base64:{body}",
            ))
    out.flush()
    return 1 if dump.damaged else 0
