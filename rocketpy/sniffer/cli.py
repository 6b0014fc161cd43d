"""``rocketpy sniff`` and ``rocketpy proxy``: argparse wiring and the source loops."""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from collections.abc import Iterable, Sequence
from typing import Any, BinaryIO

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn
from rich.text import Text

from ..cli import first_leaf
from .live import Record
from .pcap import CaptureFormatError, PacketReader, PcapWriter
from .reassembly import DEFAULT_PORTS, Endpoint, Tracker
from .render import JsonOutput, LineOutput, NullOutput, Output
from .session import FrameFilter, Session, parse_codes
from .stats import Stats

#: progress is redrawn at most every this many packets (a redraw costs more than a packet)
_PROGRESS_EVERY = 4096


def _ports(values: list[str] | None) -> frozenset[int] | None:
    if not values:
        return None
    ports = set()
    for value in values:
        for part in value.split(","):
            if part.strip():
                if not part.strip().isdigit() or not 0 < int(part) < 65536:
                    raise ValueError(f"--port {part.strip()!r} is not a port number (1-65535)")
                ports.add(int(part))
    return frozenset(ports)


def _output_arguments(p: argparse.ArgumentParser) -> None:
    out = p.add_argument_group("output")
    out.add_argument("-V", "--verbose", action="store_true", help="full typed header and decoded body")
    out.add_argument(
        "--json",
        action="store_true",
        help='JSON lines, one object per RemotingCommand or HA unit (these have an "ha" key)',
    )
    out.add_argument("--stats", action="store_true", help="a summary at the end (counts, errors, latency, topics)")
    out.add_argument("-q", "--quiet", action="store_true", help="no per-command output (use with --stats)")
    out.add_argument("-c", "--count", type=int, metavar="N", help="stop after N shown commands")
    out.add_argument("--duration", type=float, metavar="SECONDS", help="stop after this long (live, proxy)")
    out.add_argument("-w", "--write", metavar="FILE",
                     help="also write the packets that carry a shown command to FILE (pcap)")
    flt = p.add_argument_group("filters (repeatable or comma-separated; a response follows its request)")
    flt.add_argument(
        "--code",
        action="append",
        metavar="CODE",
        help="request code number or name, or a response code name (e.g. TOPIC_NOT_EXIST)",
    )
    flt.add_argument("--topic", action="append", metavar="TOPIC")
    flt.add_argument("--group", action="append", metavar="GROUP", help="producer or consumer group")


def add_parsers(subparsers: Any) -> None:
    """Register ``sniff`` and ``proxy`` on an argparse subparsers object."""
    p = subparsers.add_parser(
        "sniff",
        help="decode RemotingCommands from a capture file, stdin or a live interface",
        description="Decode every RemotingCommand on the wire, pair responses with requests, time them.",
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("-r", "--read", metavar="FILE", help="pcap or pcapng file, - for stdin (tcpdump -w -)")
    src.add_argument("-i", "--interface", metavar="IFACE", help="live capture (root or CAP_NET_RAW); any for all")
    p.add_argument(
        "--port",
        action="append",
        metavar="PORT",
        help="only connections with one of these ports at either end (repeatable or comma-separated); "
        "default: every connection whose bytes are RocketMQ remoting frames or an HA stream, "
        f"and whatever is on {','.join(map(str, sorted(DEFAULT_PORTS)))}",
    )
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar while reading a file (default: when stderr is a terminal)",
    )
    _output_arguments(p)
    p.set_defaults(func=cmd_sniff)

    q = subparsers.add_parser(
        "proxy",
        help="decoding TCP proxy in front of a NameServer or broker (no privilege needed)",
        description="Forward HOST:PORT to the upstream byte for byte and print every command both ways.",
    )
    q.add_argument("--listen", required=True, metavar="HOST:PORT")
    q.add_argument("--upstream", required=True, metavar="HOST:PORT")
    q.add_argument("--tls", action="store_true",
                   help="terminate TLS from clients (permissive: plain ones pass too) and speak TLS to the upstream "
                        "for them; a self-signed certificate unless --tls-config names keys")
    q.add_argument("--tls-config", metavar="FILE", default=None,
                   help="tls.* settings, as Java's tls.config.file (tls.server.* for clients, tls.client.* upstream)")
    _output_arguments(q)
    q.set_defaults(func=cmd_proxy)


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry (``python -m rocketpy.sniffer.cli sniff ...``)."""
    parser = argparse.ArgumentParser(prog="rocketpy")
    add_parsers(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


def _session(args: argparse.Namespace) -> tuple[Session, Console]:
    console = Console(soft_wrap=True, highlight=False)  # no file: follows sys.stdout (capsys, progress)
    errors = Console(stderr=True, highlight=False, soft_wrap=True)
    output: Output
    if args.quiet:
        output = NullOutput()
    elif args.json:
        output = JsonOutput(sys.stdout, args.verbose, errors)
    else:
        output = LineOutput(console, args.verbose)
    requests, responses = parse_codes(args.code or [])
    flt = FrameFilter(requests, responses, frozenset(args.topic or ()), frozenset(args.group or ()))
    return Session(output, Stats() if args.stats else None, flt, args.count), console


def _finish(session: Session, args: argparse.Namespace, console: Console) -> None:
    session.finish()
    if session.stats is not None:
        if args.json:
            sys.stdout.write(json.dumps({"stats": session.stats.as_dict()}, ensure_ascii=False) + "\n")
        else:
            if not console.is_terminal:
                console.width = max(console.width, 160)  # tables in a file or pipe: do not squeeze names
            session.stats.render(console)
    sys.stdout.flush()


def _fail(message: str) -> int:
    Console(stderr=True, highlight=False, soft_wrap=True).print(Text.assemble(("rocketpy:", "bold red"), " ", message))
    return 2


def cmd_sniff(args: argparse.Namespace) -> int:
    try:
        session, console = _session(args)
        ports = _ports(args.port)
    except ValueError as exc:
        return _fail(str(exc))
    truncated = 0
    try:
        if args.read is not None:
            truncated = _sniff_file(args, session, ports)
        else:
            _sniff_live(args, session, ports)
    except BrokenPipeError:
        raise  # the reader went away (| head): rocketpy's main ends quietly
    except (OSError, CaptureFormatError, RuntimeError) as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        pass
    _finish(session, args, console)
    if truncated:
        Console(stderr=True, highlight=False, soft_wrap=True).print(Text.assemble(
            ("rocketpy: warning:", "bold yellow"),
            f" the capture is cut short: its last {truncated} bytes are an incomplete record (ignored)"))
        return 1
    return 0


def _packets(records: Iterable[Record | None], session: Session, writer: PcapWriter | None) -> Any:
    """The TCP packets of the records (a None, a live capture's moment of silence, passed on); times count
    from the first record (as tshark), and with ``-w`` the records whose packet showed a command are written,
    each connection's first one after its handshake (SYN, SYN-ACK), kept till then: without it a stream on a
    port of no default is not known for RocketMQ when the file is read again."""
    from .packet import parse_tcp

    number = 0
    handshakes: dict[tuple[Endpoint, Endpoint], list[Record]] = {}
    for record in records:
        if record is None:
            yield None
            continue
        number += 1
        ts, linktype, buf = record
        if number == 1 and isinstance(session.output, LineOutput):
            session.output.t0 = ts  # even when the first packets are filtered out
        pkt = parse_tcp(ts, linktype, buf, number)
        if pkt is None:
            continue
        conn = (pkt.src, pkt.dst) if pkt.src < pkt.dst else (pkt.dst, pkt.src)
        if writer is not None and pkt.syn:
            kept = handshakes.setdefault(conn, [])
            if len(kept) < 2:
                kept.append(record)
        shown = session.shown
        try:
            yield pkt
        finally:  # also when the reader stops here (-c N reached): the last shown packet is written too
            if writer is not None:
                if session.shown > shown:
                    for syn in handshakes.pop(conn, ()):
                        writer.write(*syn)
                    writer.write(ts, linktype, buf)
                elif pkt.fin_or_rst:
                    handshakes.pop(conn, None)


def _sniff_file(args: argparse.Namespace, session: Session, ports: frozenset[int] | None) -> int:
    """Read the capture; the number of bytes of a last record cut short (0 when whole)."""
    stream: BinaryIO
    if args.read == "-":
        stream, size = sys.stdin.buffer, None
    else:
        stream = open(args.read, "rb")  # noqa: SIM115 - closed below
        size = os.fstat(stream.fileno()).st_size
    show = args.progress if args.progress is not None else (size is not None and sys.stderr.isatty())
    reader = PacketReader(stream)
    tracker = Tracker(ports)
    writer = PcapWriter(args.write) if args.write else None
    try:
        if show and size:
            with Progress(
                TextColumn("[progress.description]{task.description}"),
                BarColumn(),
                DownloadColumn(),
                TransferSpeedColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=True,
            ) as progress:
                task = progress.add_task(os.path.basename(args.read), total=size)
                for i, pkt in enumerate(_packets(reader, session, writer)):
                    session.events(tracker.packet(pkt))
                    if session.done:
                        break
                    if i % _PROGRESS_EVERY == 0:
                        progress.update(task, completed=reader.bytes_read)
        else:
            piped = size is None  # a pipe (tcpdump -w -): show each command as it comes
            for pkt in _packets(reader, session, writer):
                events = tracker.packet(pkt)
                if events:
                    session.events(events)
                    if piped:
                        sys.stdout.flush()
                if session.done:
                    break
        session.events(tracker.finish())
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
        if writer is not None:
            writer.close()
    return reader.truncated


def _sniff_live(args: argparse.Namespace, session: Session, ports: frozenset[int] | None) -> None:
    from . import live

    tracker = Tracker(ports)
    deadline = time.monotonic() + args.duration if args.duration else None
    which = f"ports {sorted(ports)}" if ports is not None else "any port"
    with live.LiveRecords(args.interface) as source:  # first: a capture that cannot start writes no file
        writer = PcapWriter(args.write, flush=True) if args.write else None
        Console(stderr=True, highlight=False).print(Text(f"capturing on {args.interface} ({which}), Ctrl-C stops"))
        packets = _packets(source, session, writer)
        try:
            for pkt in packets:
                if pkt is not None and (events := tracker.packet(pkt)):
                    session.events(events)
                    sys.stdout.flush()
                if session.done or (deadline is not None and time.monotonic() >= deadline):
                    break
        finally:
            packets.close()  # writes the packet that was being shown when the loop stopped
            session.events(tracker.finish())
            if writer is not None:
                writer.close()


def cmd_proxy(args: argparse.Namespace) -> int:
    import trio

    from .proxy import parse_hostport, serve_proxy

    try:
        session, console = _session(args)
        listen = parse_hostport(args.listen)
        upstream = parse_hostport(args.upstream)
    except ValueError as exc:
        return _fail(str(exc))

    async def run() -> None:
        with trio.move_on_after(args.duration if args.duration else float("inf")) as scope:

            def on_event(ev: Any) -> None:
                session.event(ev)
                sys.stdout.flush()
                if session.done:
                    scope.cancel()

            async with trio.open_nursery() as nursery:
                tls = None
                if args.tls:
                    from ..remoting.tls import TlsConfig

                    props = {"tls.config.file": args.tls_config} if args.tls_config else {}
                    tls = await trio.to_thread.run_sync(TlsConfig.from_properties, props)
                listeners = await nursery.start(functools.partial(serve_proxy, tls=tls), listen, upstream, on_event)
                bound = ", ".join(f"{s.socket.getsockname()[0]}:{s.socket.getsockname()[1]}" for s in listeners)
                Console(stderr=True, highlight=False).print(
                    Text(f"proxying {bound} → {upstream[0]}:{upstream[1]}, Ctrl-C stops")
                )

    failure: BaseException | None = None
    try:
        trio.run(run)
    except* OSError as group:
        failure = first_leaf(group)
    except* KeyboardInterrupt:
        pass  # Ctrl-C ends the proxy: the summary below still prints (trio may hand it over in a group)
    if failure is not None:
        return _fail(str(failure))
    _finish(session, args, console)
    return 0


if __name__ == "__main__":
    sys.exit(main())
