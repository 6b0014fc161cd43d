"""``rocketpy health``: a liveness/readiness probe for orchestrators (exit 0 healthy, 1 not), against ours or
the Java servers, built on the admin protocol.

``-n ADDR``: the NameServer answers GET_BROKER_CLUSTER_INFO (``--ready``: and knows at least one master broker).
``--broker ADDR``: the broker answers GET_BROKER_RUNTIME_INFO (``--ready``: and is not refusing writes, that is
its brokerPermission is writeable or it is a slave). One line says which, on stdout when healthy, on stderr
when not; ``--json`` prints the result as an object.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import trio

from .codecs import RemotingCommand, RequestCode, ResponseCode
from .codecs.bodies import ClusterInfo, KVTable


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("health", help="probe a NameServer or broker: exit 0 when it answers, 1 when not")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("-n", "--namesrv", help="NameServer host:port")
    target.add_argument("-b", "--broker", help="broker host:port")
    p.add_argument("--ready", action="store_true",
                   help="readiness: a NameServer must know a master broker, a broker must take writes")
    p.add_argument("--timeout", type=float, default=3.0, help="seconds to wait for the answer (default 3)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run_health)


async def _ask(addr: str, code: int, timeout: float) -> RemotingCommand:
    from .remoting import RemotingClient

    async with trio.open_nursery() as nursery:
        client = RemotingClient(nursery)
        try:
            with trio.fail_after(timeout):
                return await client.invoke(addr, RemotingCommand.request(code), timeout)
        finally:
            await client.aclose()
            nursery.cancel_scope.cancel()


async def probe(args: argparse.Namespace) -> dict[str, Any]:
    """The probe's result: ``ok`` and what was seen."""
    if args.namesrv:
        resp = await _ask(args.namesrv, RequestCode.GET_BROKER_CLUSTER_INFO, args.timeout)
        if resp.code != ResponseCode.SUCCESS:
            return {"ok": False, "role": "namesrv", "addr": args.namesrv, "error": f"code {resp.code}: {resp.remark}"}
        info = ClusterInfo.decode(resp.body or b"{}")
        masters = sorted(bd.broker_name or "" for bd in (info.broker_addr_table or {}).values() if bd.master_addr())
        ok = bool(masters) or not args.ready
        out: dict[str, Any] = {"ok": ok, "role": "namesrv", "addr": args.namesrv, "masters": masters}
        if not ok:
            out["error"] = "no master broker registered"
        return out
    resp = await _ask(args.broker, RequestCode.GET_BROKER_RUNTIME_INFO, args.timeout)
    if resp.code != ResponseCode.SUCCESS:
        return {"ok": False, "role": "broker", "addr": args.broker, "error": f"code {resp.code}: {resp.remark}"}
    table = KVTable.decode(resp.body or b"{}").table
    out = {"ok": True, "role": "broker", "addr": args.broker, "version": table.get("brokerVersionDesc"),
           "runtime": table.get("runtime")}
    if args.ready:
        cfg = await _ask(args.broker, RequestCode.GET_BROKER_CONFIG, args.timeout)
        props = dict(line.split("=", 1) for line in (cfg.body or b"").decode().splitlines() if "=" in line)
        slave = props.get("brokerRole", "") == "SLAVE"
        writeable = int(props.get("brokerPermission", "6") or 6) & 2 != 0  # PermName.PERM_WRITE
        if not (slave or writeable):
            out.update(ok=False, error="the broker refuses writes (brokerPermission)")
    return out


def run_health(args: argparse.Namespace) -> int:
    from .remoting.errors import RemotingError

    addr = args.namesrv or args.broker
    role = "namesrv" if args.namesrv else "broker"
    try:
        result = trio.run(probe, args)
    except (RemotingError, OSError, trio.TooSlowError) as exc:
        result = {"ok": False, "role": role, "addr": addr, "error": str(exc) or "no answer in time"}
    except BaseExceptionGroup as group:  # the probe's nursery: the first cause is the one to tell
        first: BaseException = group
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        if not isinstance(first, (RemotingError, OSError, trio.TooSlowError)):
            raise
        result = {"ok": False, "role": role, "addr": addr, "error": str(first) or "no answer in time"}
    if args.json:
        sys.stdout.write(json.dumps(result) + "\n")
    elif result["ok"]:
        detail = f"masters {','.join(result['masters']) or '-'}" if role == "namesrv" else result.get("version")
        sys.stdout.write(f"OK {role} {addr} {detail}\n")
    else:
        sys.stderr.write(f"rocketpy health: {role} {addr}: {result['error']}\n")
    return 0 if result["ok"] else 1
