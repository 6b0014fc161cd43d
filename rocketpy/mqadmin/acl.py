"""mqadmin's ACL subcommands: updateAclConfig, deleteAclConfig, updateGlobalWhiteAddr, clusterAclConfigVersion."""

from __future__ import annotations

import argparse
from typing import Any

from ..client.admin import Admin
from ..client.errors import MQClientError
from ..client.java_text import java_bool, java_hash_order
from ..javacompat.lang import java_string_hash
from ..remoting.errors import RemotingTimeoutError
from .core import Out, command, need_target, time_str


def _target_opts(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("-b", "--brokerAddr", dest="broker_addr", help=f"{what} which broker")
    p.add_argument("-c", "--clusterName", dest="cluster", help=f"{what} which cluster")


async def _targets(admin: Admin, args: argparse.Namespace) -> list[str]:
    """-b as given, else every broker of -c, slaves too (as mqadmin's update/delete commands)."""
    need_target(args)
    if args.broker_addr:
        return [args.broker_addr.strip()]
    return await admin.master_and_slave_addrs(args.cluster.strip())


def _update_acl_opts(p: argparse.ArgumentParser) -> None:
    _target_opts(p, "update acl config file to")
    p.add_argument("-a", "--accessKey", dest="access_key", required=True, help="set accessKey in acl config file")
    p.add_argument("-s", "--secretKey", dest="secret_key", required=True, help="set secretKey in acl config file")
    p.add_argument("-w", "--whiteRemoteAddress", dest="white", help="set white ip Address for account in acl config "
                   "file")
    p.add_argument("-i", "--defaultTopicPerm", dest="default_topic_perm",
                   help="set default topicPerm in acl config file")
    p.add_argument("-u", "--defaultGroupPerm", dest="default_group_perm",
                   help="set default GroupPerm in acl config file")
    p.add_argument("-t", "--topicPerms", dest="topic_perms", help="set topicPerms list,eg: topicA=DENY,topicD=SUB")
    p.add_argument("-g", "--groupPerms", dest="group_perms", help="set groupPerms list,eg: groupD=DENY,groupD=SUB")
    p.add_argument("-m", "--admin", dest="admin", help="set admin flag in acl config file (true/false; default "
                   "false)")


def _access_config(args: argparse.Namespace) -> dict[str, Any]:
    """PlainAccessConfig from the options (values trimmed, lists split at commas, as mqadmin)."""
    cfg: dict[str, Any] = {"accessKey": args.access_key.strip(), "secretKey": args.secret_key.strip(),
                           "whiteRemoteAddress": None, "admin": False, "defaultTopicPerm": None,
                           "defaultGroupPerm": None, "topicPerms": None, "groupPerms": None}
    if args.admin is not None:
        cfg["admin"] = args.admin.strip().lower() == "true"  # Boolean.parseBoolean
    for key, value in (("defaultTopicPerm", args.default_topic_perm), ("defaultGroupPerm", args.default_group_perm),
                       ("whiteRemoteAddress", args.white)):
        if value is not None:
            cfg[key] = value.strip()
    for key, value in (("topicPerms", args.topic_perms), ("groupPerms", args.group_perms)):
        if value is not None:
            cfg[key] = [part for part in value.strip().split(",")]
    return cfg


def access_config_str(cfg: dict[str, Any]) -> str:
    """The account just written. mqadmin prints PlainAccessConfig's identity (``...PlainAccessConfig@1b2c3d``),
    which says nothing: this prints its fields instead, the secret key left out."""
    def lst(items: list[str] | None) -> str:
        return "null" if items is None else "[" + ", ".join(items) + "]"

    def s(v: str | None) -> str:
        return "null" if v is None else v

    return (f"PlainAccessConfig{{accessKey={cfg['accessKey']}, whiteRemoteAddress={s(cfg['whiteRemoteAddress'])}, "
            f"admin={java_bool(cfg['admin'])}, defaultTopicPerm={s(cfg['defaultTopicPerm'])}, "
            f"defaultGroupPerm={s(cfg['defaultGroupPerm'])}, topicPerms={lst(cfg['topicPerms'])}, "
            f"groupPerms={lst(cfg['groupPerms'])}}}")


@command("updateAclConfig", "Update acl config yaml file in broker", _update_acl_opts)
async def update_acl_config(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    cfg = _access_config(args)
    done = []
    for addr in await _targets(admin, args):
        await admin.create_and_update_plain_access_config(addr, cfg)
        out.line(f"create or update plain access config to {addr} success.")
        done.append(addr)
    out.raw(access_config_str(cfg))
    shown = {k: v for k, v in cfg.items() if k != "secretKey"}
    out.result({"brokers": done, "accessConfig": shown})
    return 0


def _delete_acl_opts(p: argparse.ArgumentParser) -> None:
    _target_opts(p, "delete acl config account from")
    p.add_argument("-a", "--accessKey", dest="access_key", required=True,
                   help="set accessKey in acl config file for deleting which account")


@command("deleteAclConfig", "Delete Acl Config Account in broker", _delete_acl_opts)
async def delete_acl_config(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    access_key = args.access_key.strip()
    done = []
    for addr in await _targets(admin, args):
        await admin.delete_plain_access_config(addr, access_key)
        out.line(f"delete plain access config account from {addr} success.")
        done.append(addr)
    out.raw(f"account's accesskey is:{access_key}")
    out.result({"brokers": done, "accessKey": access_key})
    return 0


def _white_opts(p: argparse.ArgumentParser) -> None:
    _target_opts(p, "update global white address to")
    p.add_argument("-g", "--globalWhiteRemoteAddresses", dest="addresses", required=True,
                   help="set globalWhiteRemoteAddress list,eg: 10.10.103.*,192.168.0.*")
    p.add_argument("-p", "--aclFileFullPath", dest="acl_file", default=None,
                   help="update global white address of specified acl file,eg: /xxx/plain_test.yml "
                        "(default: the broker's plain_acl.yml)")


@command("updateGlobalWhiteAddr", "Update global white address for acl Config File in broker", _white_opts)
async def update_global_white_addr(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    addresses = args.addresses.strip()
    acl_file = args.acl_file.strip() if args.acl_file is not None else None
    done = []
    for addr in await _targets(admin, args):
        await admin.update_global_white_addr_config(addr, addresses, acl_file)
        out.line(f"update global white remote addresses to {addr} success.")
        done.append(addr)
    out.result({"brokers": done, "globalWhiteRemoteAddresses": addresses.split(","), "aclFileFullPath": acl_file})
    return 0


def _version_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-b", "--brokerAddr", dest="broker_addr", help="query acl config version for which broker")
    p.add_argument("-c", "--clusterName", dest="cluster", help="query acl config version for specified cluster")


_ROW = "{:<16}  {:<22}  {:<22}  {:<20}  {:<22}  {:<22}"


def acl_version_rows(info: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per ACL file, in the order mqadmin's HashMap gives them."""
    every = info.get("allAclConfigDataVersion") or {}
    rows = []
    for path in java_hash_order(list(every), java_string_hash):
        v = every[path] or {}
        rows.append({"clusterName": info.get("clusterName"), "brokerName": info.get("brokerName"),
                     "brokerAddr": info.get("brokerAddr"), "aclFilePath": path,
                     "counter": int(v.get("counter", 0)), "timestamp": int(v.get("timestamp", 0))})
    return rows


def _print_row(out: Out, r: dict[str, Any]) -> None:
    stamp = time_str(r["timestamp"]) if r["timestamp"] > 0 else "1970-01-01 00:00:00"
    out.line(_ROW.format(str(r["clusterName"]), str(r["brokerName"]), str(r["brokerAddr"]), r["aclFilePath"],
                         str(r["counter"]), stamp))


@command("clusterAclConfigVersion", "List all of acl config version information in cluster", _version_opts)
async def cluster_acl_config_version(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    try:
        return await _cluster_acl_config_version(admin, args, out)
    except RemotingTimeoutError as exc:  # as Java's, a broker without ACL leaves the request unanswered
        raise MQClientError(f"{exc} (a broker with aclEnable=false does not answer)") from None


async def _cluster_acl_config_version(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    need_target(args)
    rows: list[dict[str, Any]] = []
    if args.broker_addr:
        rows = acl_version_rows(await admin.broker_cluster_acl_info(args.broker_addr.strip()))
        for r in rows:
            _print_row(out, r)
        out.line("get broker's plain access config version success.")
    else:
        out.line(_ROW.format("#Cluster Name", "#Broker Name", "#Broker Addr", "#AclFilePath", "#AclConfigVersionNum",
                             "#AclLastUpdateTime"))
        for addr in await admin.master_addrs(args.cluster.strip()):
            for r in acl_version_rows(await admin.broker_cluster_acl_info(addr)):
                _print_row(out, r)
                rows.append(r)
        out.line("get cluster's plain access config version success.")
    out.result(rows)
    return 0
