"""``rocketpy produce``, ``rocketpy consume`` and ``rocketpy admin ...`` (mqadmin's commands)."""

from __future__ import annotations

import argparse
import base64
import json
import logging
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from ..codecs.codes import ConsumeFromWhere, ResponseCode
from ..codecs.message import MessageExt
from ..remoting.errors import RemotingError
from .cli_tls import add_tls_options, tls_options
from .config import ClientConfig, default_namesrv
from .errors import MQClientError
from .message import make_message
from .producer import Producer
from .push_consumer import ConsumeContext, PushConsumer


class DefaultsHelp(argparse.HelpFormatter):
    """Each flag's help ends with its default, when it has one worth saying and does not say it already."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if ("default" in text or action.default is None or action.default is False
                or action.default == argparse.SUPPRESS or not action.option_strings):
            return text
        return f"{text} (default: %(default)s)"


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("produce", help="send each stdin line as a message; print one JSON line per result",
                       formatter_class=DefaultsHelp)
    _namesrv(p)
    p.add_argument("-t", "--topic", required=True, help="topic to send to")
    p.add_argument("-g", "--group", default="rocketpy_cli_producer", help="producer group")
    p.add_argument("--tag", help="message tag")
    p.add_argument("--keys", help="space-separated keys")
    p.add_argument("--property", action="append", default=[], metavar="K=V", help="user property (repeatable)")
    p.add_argument("--delay-level", type=int, default=0, help="delay level 1-18 (default: 0, none)")
    p.add_argument("-v", "--verbose", action="store_true", help="show the client's log")
    p.set_defaults(func=cmd_produce)

    c = sub.add_parser("consume", help="print one JSON line per message; stop after N messages or S quiet seconds",
                       formatter_class=DefaultsHelp)
    _namesrv(c)
    c.add_argument("-t", "--topic", required=True, help="topic to consume")
    c.add_argument("-g", "--group", required=True, help="consumer group")
    c.add_argument("--tag-expr", default="*", help="tag expression (TagA || TagB)")
    c.add_argument("--count", type=int, default=0, help="exit after this many messages (0: no limit)")
    c.add_argument("--timeout", type=float, default=10.0, help="exit after this many seconds without a message")
    c.add_argument("--from", dest="from_where", choices=["first", "last"], default="first",
                   help="where a new group starts")
    c.add_argument("-v", "--verbose", action="store_true", help="show the client's log")
    c.set_defaults(func=cmd_consume)


def _namesrv(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", "--namesrv", "--namesrvAddr", dest="namesrv", default=None,
                   help=f"name server address list, ';' separated (default: $ROCKETMQ_NAMESRV or {default_namesrv()})")
    add_tls_options(p)


def _config(args: argparse.Namespace) -> ClientConfig:
    return ClientConfig(namesrv_addr=args.namesrv or default_namesrv(), **tls_options(args))



def _props(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        k, sep, v = item.partition("=")
        if not sep or not k:
            raise SystemExit(f"--property wants K=V, got {item!r}")
        out[k] = v
    return out


def fail(command: str, message: str, status: int = 1) -> int:
    """One line on stderr, and the exit status."""
    from ..cli import command_label

    print(f"{command_label(command)}: {message}", file=sys.stderr, flush=True)
    return status


def run_quietly(command: str, main: Callable[[], Awaitable[int]], verbose: bool = False) -> int:
    """trio.run(main) for a command line: a client failure is one line and status 1, Ctrl-C is status 130.

    The client's own warnings (route refreshes failing every few seconds) are silenced unless
    ``verbose``: the command reports the cause itself, once.
    """
    client_log = logging.getLogger("rocketpy.client")
    level = client_log.level
    if not verbose:
        client_log.setLevel(logging.CRITICAL)
    failure: BaseException | None = None
    interrupted = False
    try:
        return trio.run(main)
    except* KeyboardInterrupt:
        interrupted = True
    except* (MQClientError, RemotingError) as group:  # a broker gone, a timeout: the cause in one line
        failure = group
        while isinstance(failure, BaseExceptionGroup):
            failure = failure.exceptions[0]
    finally:
        client_log.setLevel(level)  # run in-process (tests, the console): the client logs as before
    if interrupted:
        return 130
    from .errors import BadArgument

    return fail(command, str(failure), 2 if isinstance(failure, BadArgument) else 1)


async def preflight(command: str, config: ClientConfig, topic: str, need_route: bool) -> None:
    """MQClientError with the real cause when the NameServer cannot be asked, or (``need_route``)
    when it knows no such topic: a consumer would otherwise wait quietly for a route that never comes."""
    from .admin import Admin

    async with Admin(config.namesrv_addr) as admin:
        try:
            await admin.topic_route(topic)
        except MQClientError as exc:
            if exc.response_code == ResponseCode.TOPIC_NOT_EXIST:
                if need_route:
                    raise MQClientError(f"topic {topic} does not exist (the NameServer "
                                        f"{config.namesrv_addr} has no route for it)") from None
                return
            raise MQClientError(f"cannot reach the NameServer {config.namesrv_addr}: {exc}") from None


def cmd_produce(args: argparse.Namespace) -> int:
    props = _props(args.property)

    async def main() -> int:
        failures = 0
        config = _config(args)
        await preflight("produce", config, args.topic, need_route=False)
        async with Producer(args.group, config=config) as producer:
            lines = await trio.to_thread.run_sync(sys.stdin.buffer.read)
            for raw in lines.splitlines():
                msg = make_message(args.topic, raw, tags=args.tag, keys=args.keys, properties=props,
                                   delay_level=args.delay_level or None)
                try:
                    result = await producer.send(msg)
                    print(json.dumps(result.to_dict()), flush=True)
                except MQClientError as exc:
                    failures += 1
                    print(json.dumps({"status": "ERROR", "error": str(exc)}), flush=True)
                    if failures == 1:
                        fail("produce", str(exc))
        return 1 if failures else 0

    return run_quietly("produce", main, args.verbose)


def message_json(msg: MessageExt) -> dict[str, Any]:
    body = msg.decompressed_body()
    out: dict[str, Any] = {
        "msgId": msg.client_msg_id, "topic": msg.topic, "tags": msg.tags, "keys": msg.keys,
        "properties": dict(msg.properties), "queueId": msg.queue_id, "queueOffset": msg.queue_offset,
        "reconsumeTimes": msg.reconsume_times,
    }
    try:
        out["body"] = body.decode("utf-8")
    except UnicodeDecodeError:
        out["body"] = base64.b64encode(body).decode("ascii")
        out["bodyBase64"] = True
    return out


def cmd_consume(args: argparse.Namespace) -> int:
    reader_gone = False

    async def main() -> int:
        nonlocal reader_gone
        seen = 0
        done = trio.Event()
        last = trio.current_time()

        async def listener(msgs: list[MessageExt], ctx: ConsumeContext) -> None:
            nonlocal seen, last, reader_gone
            for m in msgs:
                if done.is_set():
                    # --count reached or the reader gone (| head): what was fetched but not printed is neither
                    # acknowledged nor sent back; the shutdown cancels this wait, the offset stays before it
                    await trio.sleep_forever()
                try:
                    print(json.dumps(message_json(m), ensure_ascii=False), flush=True)
                except BrokenPipeError:
                    reader_gone = True
                    done.set()
                    await trio.sleep_forever()
                seen += 1
                last = trio.current_time()
                if args.count and seen >= args.count:
                    done.set()

        where = (ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET if args.from_where == "first"
                 else ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET)
        config = _config(args)
        config.rebalance_interval = 2.0
        # a listener held back by ``done`` never finishes: the shutdown waits for it only briefly
        consumer = PushConsumer(args.group, listener, config=config, consume_from_where=where, consume_concurrency=1,
                                await_termination=0.5)
        consumer.subscribe(args.topic, args.tag_expr)
        await preflight("consume", config, args.topic, need_route=True)
        async with consumer:
            while not done.is_set() and trio.current_time() - last < args.timeout:
                with trio.move_on_after(0.1):
                    await done.wait()
        return 0

    status = run_quietly("consume", main, args.verbose)
    if reader_gone:
        raise BrokenPipeError  # quiet exit 141, as any command whose reader went away
    return status
