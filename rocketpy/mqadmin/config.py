"""mqadmin's configuration subcommands: broker and NameServer configs (getBrokerConfig, updateBrokerConfig,
getNamesrvConfig, updateNamesrvConfig), KV configs (updateKvConfig, deleteKvConfig, updateOrderConf),
exportMetadata, exportConfigs.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import trio

from ..client.admin import Admin
from ..client.errors import BadArgument
from ..client.java_text import fastjson_pretty, java_hash_order, java_properties_order, java_str
from ..clock import now_ms
from ..javacompat.lang import java_string_hash
from .core import (
    _GROUP_FIELDS,
    Out,
    broker_or_cluster_opts,
    command,
    namesrv_list,
    need_target,
    topic_config_json,
    topic_opt,
    write_text,
)


@command("getBrokerConfig", "Get broker config by cluster or special broker!", broker_or_cluster_opts)
async def get_broker_config(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    need_target(args)
    result = {}
    for addr in await admin.master_addrs(args.cluster, args.broker_addr):
        out.line(f"============{'Master: ' if args.cluster else ''}{addr}============")
        config = await admin.broker_config(addr)
        for k in java_properties_order(list(config)):
            out.line(f"{k:<50}=  {config[k]}")
        out.line()
        result[addr] = config
    out.result(result)
    return 0


def _kv_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-k", "--key", required=True, help="config key")
    p.add_argument("-v", "--value", required=True, help="config value")


def _update_broker_config_opts(p: argparse.ArgumentParser) -> None:
    broker_or_cluster_opts(p)
    _kv_opts(p)
    p.add_argument("--adminCredential", dest="credential", default=os.environ.get("ROCKETPY_ADMIN_CREDENTIAL"),
                   help="a rocketpy broker's adminCredential (default: $ROCKETPY_ADMIN_CREDENTIAL)")


@command("updateBrokerConfig", "Update broker's config", _update_broker_config_opts)
async def update_broker_config(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    need_target(args)
    done = []
    for addr in await admin.master_addrs(args.cluster, args.broker_addr):
        await admin.update_broker_config(addr, {args.key.strip(): args.value.strip()}, args.credential)
        out.line(f"update broker config success, {addr}")
        done.append(addr)
    out.result({"brokers": done, args.key.strip(): args.value.strip()})
    return 0


@command("getNamesrvConfig", "Get configs of name server.", lambda p: None)
async def get_namesrv_config(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    result = {}
    for addr in namesrv_list(args):
        config = await admin.namesrv_config(addr)
        out.line(f"============{addr}============")
        for k in java_properties_order(list(config)):
            out.line(f"{k:<50}=  {config[k]}")
        result[addr] = config
    out.result(result)
    return 0


@command("updateNamesrvConfig", "Update configs of name server.", _kv_opts)
async def update_namesrv_config(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    servers = namesrv_list(args)
    key, value = args.key.strip(), args.value.strip()
    for addr in servers:
        await admin.update_namesrv_config(addr, {key: value})
    out.line(f"update name server config success!{'[' + ', '.join(servers) + ']'}")
    out.line(f"{key} : {value}")
    out.result({"nameServers": servers, key: value})
    return 0


def _kv_namespace_opts(p: argparse.ArgumentParser, with_value: bool) -> None:
    p.add_argument("-s", "--namespace", required=True, help="the namespace")
    p.add_argument("-k", "--key", required=True, help="the key name")
    if with_value:
        p.add_argument("-v", "--value", required=True, help="the key value")


@command("updateKvConfig", "Create or update KV config.", lambda p: _kv_namespace_opts(p, True))
async def update_kv_config(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    await admin.put_kv_config(args.namespace.strip(), args.key.strip(), args.value.strip())
    out.line("create or update kv config to namespace success.")
    out.result({"namespace": args.namespace.strip(), args.key.strip(): args.value.strip()})
    return 0


@command("deleteKvConfig", "Delete KV config.", lambda p: _kv_namespace_opts(p, False))
async def delete_kv_config(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    await admin.delete_kv_config(args.namespace.strip(), args.key.strip())
    out.line("delete kv config from namespace success.")
    out.result({"namespace": args.namespace.strip(), "deleted": args.key.strip()})
    return 0


def _order_conf_opts(p: argparse.ArgumentParser) -> None:
    topic_opt(p)
    p.add_argument("-m", "--method", required=True, choices=["get", "put", "delete"], help="what to do")
    p.add_argument("-v", "--orderConf", dest="order_conf", help="the order conf, e.g. broker-a:4;broker-b:4 (put)")


#: NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG
ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"


@command("updateOrderConf", "Create or update or delete order conf", _order_conf_opts)
async def update_order_conf(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    topic = args.topic.strip()
    if args.method == "get":
        conf = await admin.get_kv_config(ORDER_TOPIC_CONFIG, topic)
        out.raw(f"get orderConf success. topic=[{topic}], orderConf=[{java_str(conf)}] ")
        out.result({"topic": topic, "orderConf": conf})
    elif args.method == "put":
        conf = (args.order_conf or "").strip()
        if not conf:
            raise BadArgument("please set orderConf with option -v.")
        for addr in namesrv_list(args):  # createOrUpdateOrderConf(..., isCluster=true): every name server
            await admin.put_kv_config(ORDER_TOPIC_CONFIG, topic, conf, addr)
        out.raw(f"update orderConf success. topic=[{topic}], orderConf=[{conf}]")
        out.result({"topic": topic, "orderConf": conf})
    else:
        await admin.delete_kv_config(ORDER_TOPIC_CONFIG, topic)
        out.raw(f"delete orderConf success. topic=[{topic}]")
        out.result({"topic": topic, "deleted": True})
    return 0


def _bean(fields: dict[str, Any]) -> dict[str, Any]:
    return dict(sorted(fields.items()))  # fastjson writes a bean's fields sorted by name


def hash_map(table: dict[str, Any]) -> dict[str, Any]:
    return {k: table[k] for k in java_hash_order(list(table), java_string_hash)}


def _export_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-c", "--clusterName", dest="cluster", help="export every master of this cluster")
    p.add_argument("-b", "--brokerAddr", dest="broker_addr", help="export one broker")
    p.add_argument("-f", "--filePath", dest="path", default="/tmp/rocketmq/export", help="directory to write to")
    p.add_argument("-t", "--topic", action="store_true", help="only topic metadata")
    p.add_argument("-g", "--subscriptionGroup", dest="groups", action="store_true", help="only group metadata")
    p.add_argument("-s", "--specialTopic", dest="special", action="store_true", help="include %%RETRY%% and %%DLQ%%")


@command("exportMetadata", "export metadata", _export_opts)
async def export_metadata(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    if not args.cluster and not args.broker_addr:
        raise BadArgument("give -c clusterName or -b brokerAddr")
    addrs = await admin.master_addrs(args.cluster.strip() if args.cluster else None,
                                     args.broker_addr.strip() if args.broker_addr else None)
    topics: dict[str, dict[str, Any]] = {}
    groups: dict[str, dict[str, Any]] = {}
    for addr in addrs:  # queue counts of a topic on several brokers add up, as mqadmin's
        for name, c in (await admin.user_topic_configs(addr, args.special)).items():
            t = topic_config_json(c)
            if name in topics:
                t["readQueueNums"] += topics[name]["readQueueNums"]
                t["writeQueueNums"] += topics[name]["writeQueueNums"]
            topics[name] = t
        for name, g in (await admin.user_sub_groups(addr)).items():
            fields = {java: getattr(g, attr) for java, attr in _GROUP_FIELDS}
            if name in groups:
                fields["retryQueueNums"] += groups[name]["retryQueueNums"]
            groups[name] = fields
    result: dict[str, Any] = {}
    if not args.groups:
        result["topicConfigTable"] = hash_map({k: _bean(v) for k, v in topics.items()})
    if not args.topic:
        result["subscriptionGroupTable"] = hash_map({k: _bean(v) for k, v in groups.items()})
    result["exportTime"] = now_ms()
    name = "topic.json" if args.topic else "subscriptionGroup.json" if args.groups else "metadata.json"
    path = os.path.join(args.path, name)
    await trio.to_thread.run_sync(write_text, path, fastjson_pretty(hash_map(result)))
    out.line(f"export {path} success")
    out.result({"path": path, **result})
    return 0


#: ExportConfigsCommand.needBrokerProprties, in the order it puts them
_EXPORTED_BROKER_KEYS = ("brokerClusterName", "brokerId", "brokerName", "brokerRole", "fileReservedTime",
                         "filterServerNums", "flushDiskType", "maxMessageSize", "messageDelayLevel",
                         "msgTraceTopicName", "slaveReadEnable", "traceOn", "traceTopicEnable", "useTLS",
                         "autoCreateTopicEnable", "autoCreateSubscriptionGroup")


def _export_configs_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-c", "--clusterName", dest="cluster", required=True, help="the cluster to export")
    p.add_argument("-f", "--filePath", dest="path", default="/tmp/rocketmq/export", help="directory to write to")


@command("exportConfigs", "export configs", _export_configs_opts)
async def export_configs(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    cluster = args.cluster.strip()
    info = await admin.cluster_info()
    names = (info.cluster_addr_table or {}).get(cluster) or []
    masters = slaves = 0
    configs: dict[str, dict[str, str]] = {}
    for name in names:
        bd = (info.broker_addr_table or {}).get(name)
        addrs = {int(k): a for k, a in ((bd.broker_addrs or {}) if bd else {}).items()}
        if 0 not in addrs:
            continue
        masters += 1
        slaves += len(addrs) - 1
        config = await admin.broker_config(addrs[0])
        picked = [k for k in _EXPORTED_BROKER_KEYS if config.get(k) is not None]
        configs[config.get("brokerName", name)] = {k: config[k] for k in java_properties_order(picked)}
    scale = {"namesrvSize": len(namesrv_list(args)), "masterBrokerSize": masters, "slaveBrokerSize": slaves}
    result = hash_map({"brokerConfigs": hash_map(configs), "clusterScale": hash_map(scale)})
    path = os.path.join(args.path, "configs.json")
    await trio.to_thread.run_sync(write_text, path, fastjson_pretty(result))
    out.raw(f"export {path} success")
    out.result({"path": path, **result})
    return 0
