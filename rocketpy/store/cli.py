"""``rocketpy store check DIR`` and ``rocketpy store dump DIR``: operator tools, read-only."""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

from ..codecs import store_records as sr
from ..codecs.errors import CodecError
from ..codecs.message import MessageExt
from .check import CheckReport, check_store, iter_store_records
from .config import MessageStoreConfig

__all__ = ["add_parsers", "add_store_parser", "message_to_dict"]


def add_store_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
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
    with open(path, encoding="utf-8") as f:
        return MessageStoreConfig.from_properties(f.read(), store_path_root_dir=root, store_path_commit_log=None)


def _cmd_check(args: argparse.Namespace) -> int:
    if not os.path.isdir(args.dir):
        print(f"not a directory: {args.dir}", file=sys.stderr)
        return 2
    report = check_store(args.dir, _load_config(args.config, args.dir), check_crc=not args.no_crc)
    if args.json:
        print(json.dumps(_report_json(report), indent=1))
    else:
        _print_report(report)
    return 0 if report.ok else 1


def _report_json(report: CheckReport) -> dict[str, Any]:
    return {
        "root": report.root,
        "ok": report.ok,
        "cleanShutdown": report.clean_shutdown,
        "inUse": report.in_use,
        "errors": report.errors,
        "warnings": report.warnings,
        "sections": {s.title: {k: str(v) for k, v in s.facts.items()} for s in report.sections},
    }


def _print_report(report: CheckReport) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"[bold]Store[/bold] {report.root}")
    for sec in report.sections:
        table = Table(title=sec.title, show_header=False, title_justify="left")
        table.add_column("fact", style="cyan")
        table.add_column("value")
        for k, v in sec.facts.items():
            table.add_row(k, str(v))
        for w in sec.warnings:
            table.add_row("[yellow]warning[/yellow]", w)
        for e in sec.errors:
            table.add_row("[red]ERROR[/red]", e)
        console.print(table)
    shutdown = "clean shutdown" if report.clean_shutdown else "NOT shut down cleanly (abort file present)"
    if report.ok:
        console.print(f"[green]OK[/green]: {shutdown}, {len(report.warnings)} warning(s)")
    else:
        console.print(
            f"[red]DAMAGED[/red]: {len(report.errors)} error(s), {len(report.warnings)} warning(s); {shutdown}"
        )


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


def _commit_dir(path: str) -> str:
    sub = os.path.join(path, "commitlog")
    return sub if os.path.isdir(sub) else path


def _records(args: argparse.Namespace) -> Iterator[MessageExt]:
    n = 0
    for name, rec in iter_store_records(_commit_dir(args.dir)):
        if isinstance(rec, sr.CommitLogCorruption):
            print(f"warning: {name}: {rec}", file=sys.stderr)
            continue
        if isinstance(rec, sr.BlankRecord):
            continue
        if args.topic and rec.topic != args.topic:
            continue
        yield rec
        n += 1
        if args.limit and n >= args.limit:
            return


def _cmd_dump(args: argparse.Namespace) -> int:
    if not os.path.isdir(args.dir):
        print(f"not a directory: {args.dir}", file=sys.stderr)
        return 2
    if args.json:
        out = sys.stdout
        for msg in _records(args):
            out.write(json.dumps(message_to_dict(msg, args.body, args.decompress), ensure_ascii=False))
            out.write("\n")
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"CommitLog of {args.dir}")
    for col in ("offset", "topic", "qid", "qoff", "store time", "born host", "tags", "keys", "uniq key", "body"):
        table.add_column(col, overflow="fold")
    for msg in _records(args):
        d = message_to_dict(msg, args.body, args.decompress)
        body = d["body"] if len(d["body"]) <= 60 else d["body"][:57] + "..."
        table.add_row(
            str(msg.commit_log_offset),
            msg.topic,
            str(msg.queue_id),
            str(msg.queue_offset),
            str(msg.store_timestamp),
            msg.born_host,
            msg.tags or "",
            msg.keys_string or "",
            msg.uniq_key or "",
            body if d["bodyEncoding"] == "utf8" else f"[base64] {body}",
        )
    Console().print(table)
    return 0
