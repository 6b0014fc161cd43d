"""The NameServer's dispatch table: every request code Java's DefaultRequestProcessor 4.9.8 answers.

Handlers are small synchronous functions ``(ctx, request) -> response`` over the
NameServer state (``ctx.state``); answers carry Java's codes and remarks.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, TypeAlias

from ..codecs import CodecError, MQVersion, RemotingCommand, RequestCode, ResponseCode
from ..codecs.bodies.register import (
    DataVersion,
    RegisterBodyOverLimit,
    RegisterBrokerBody,
    TopicConfigSerializeWrapper,
    body_crc32,
)
from ..codecs.bodies.registry import route_data_features
from ..codecs.bodies.route import BrokerData, ClusterInfo, QueueData, TopicList, TopicRouteData
from ..codecs.headers.namesrv import (
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)
from ..javacompat import properties
from ..javacompat.hashmap import concurrent_hashmap_order
from ..remoting.dispatch import Dispatcher, Handler, RequestContext, java_decode_header, one_line
from .kv_config import NAMESPACE_ORDER_TOPIC_CONFIG
from .limits import BODY_LIMITS, MAX_TOPICS, body_refusal, inflated_cause, refuse, topics_cause
from .route_info import RouteView

if TYPE_CHECKING:
    from .server import NameServer

#: the context NameServer handlers get: ``state`` is the NameServer
NamesrvContext: TypeAlias = "RequestContext[NameServer]"

log = logging.getLogger("rocketpy.namesrv")

#: FAQUrl.suggestTodo(FAQUrl.APPLY_TOPIC_URL)
APPLY_TOPIC_TIP = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."


class RequestFailed(ValueError):
    """A request Java would fail with an exception (answered SYSTEM_ERROR, one log line)."""


def _ok(request: RemotingCommand, header: Any = None, body: bytes | None = None) -> RemotingCommand:
    return request.response(ResponseCode.SUCCESS, header=header, body=body)


def _require(value: Any, name: str) -> Any:
    # where Java unboxes a null Long it throws; we answer SYSTEM_ERROR the same way
    if value is None:
        raise RequestFailed(f"the custom field <{name}> is null")
    return value


def _j(value: Any) -> str:
    """A value as Java's string concatenation prints it (null for None)."""
    return "null" if value is None else str(value)


# -- KV config ---------------------------------------------------------------------


async def put_kv_config(ctx: NamesrvContext, request: RemotingCommand) -> RemotingCommand:
    h = java_decode_header(request, PutKVConfigRequestHeader)
    if h.namespace is None or h.key is None:
        return request.response(ResponseCode.SYSTEM_ERROR, remark="namespace or key is null")
    kv = ctx.state.kv
    kv.put(h.namespace, h.key, h.value)
    await kv.save()  # answered once on disk, as Java's handler does
    return _ok(request)


def get_kv_config(ctx: NamesrvContext, request: RemotingCommand) -> RemotingCommand:
    h = java_decode_header(request, GetKVConfigRequestHeader)
    value = ctx.state.kv.get(h.namespace, h.key)
    if value is not None:
        return _ok(request, GetKVConfigResponseHeader(value=value))
    return request.response(
        ResponseCode.QUERY_NOT_FOUND,
        header=GetKVConfigResponseHeader(),
        remark=f"No config item, Namespace: {_j(h.namespace)} Key: {_j(h.key)}",
    )


async def delete_kv_config(ctx: NamesrvContext, request: RemotingCommand) -> RemotingCommand:
    h = java_decode_header(request, DeleteKVConfigRequestHeader)
    kv = ctx.state.kv
    kv.delete(h.namespace, h.key)
    await kv.save()
    return _ok(request)


def get_kv_list_by_namespace(ctx: NamesrvContext, request: RemotingCommand) -> RemotingCommand:
    h = java_decode_header(request, GetKVListByNamespaceRequestHeader)
    body = ctx.state.kv.list_namespace(h.namespace)
    if body is not None:
        return _ok(request, body=body)
    return request.response(ResponseCode.QUERY_NOT_FOUND, remark=f"No config item, Namespace: {_j(h.namespace)}")


# -- brokers ---------------------------------------------------------------------------


def query_data_version(ctx: NamesrvContext, request: RemotingCommand) -> RemotingCommand:
    h = java_decode_header(request, QueryDataVersionRequestHeader)
    routes = ctx.state.routes
    if request.body is None:
        raise RequestFailed("QUERY_DATA_VERSION without a DataVersion body")  # Java fails the same way
    refused = body_refusal(ctx, request)
    if refused is not None:
        return refused
    version = DataVersion.decode(request.body)
    changed = routes.is_broker_topic_config_changed(h.broker_addr, version)
    if not changed:
        routes.update_broker_info_update_timestamp(h.broker_addr)
    known = routes.query_broker_topic_config(h.broker_addr)
    body = known.encode() if known is not None else None
    return _ok(request, QueryDataVersionResponseHeader(changed=changed), body)


def register_broker(ctx: NamesrvContext, request: RemotingCommand) -> RemotingCommand:
    """DefaultRequestProcessor.registerBroker(WithFilterServer), within the limits of :mod:`.limits`: a body
    over registerBrokerMaxBodySize is refused undecoded, a compressed one inflating past it or holding more
    than registerBrokerMaxTopics topics as soon as that shows, a plain one of too many topics before any is
    filed."""
    ns = ctx.state
    h = java_decode_header(request, RegisterBrokerRequestHeader)
    refused = body_refusal(ctx, request)
    if refused is not None:
        return refused
    max_topics = ns.config.limit(MAX_TOPICS)
    if h.body_crc32 and body_crc32(request.body) != h.body_crc32:
        log.warning("receive registerBroker request,crc32 not match,from %s", ctx.remote_addr)
        return request.response(
            ResponseCode.SYSTEM_ERROR, header=RegisterBrokerResponseHeader(), remark="crc32 not match"
        )
    with_filter_servers = request.version >= MQVersion.V3_0_11
    filter_servers: list[str] | None = None
    if request.body is None:
        wrapper = TopicConfigSerializeWrapper(data_version=DataVersion(timestamp=0, counter=0))
        if with_filter_servers:
            filter_servers = []
    elif with_filter_servers:
        max_inflated = ns.config.limit(BODY_LIMITS[RequestCode.REGISTER_BROKER])
        try:
            body = RegisterBrokerBody.decode(request.body, h.compressed, max_inflated=max_inflated,
                                             max_topics=max_topics)
        except RegisterBodyOverLimit as over:
            if over.what == "topics":
                return refuse(ctx, request, topics_cause(over.amount, max_topics))
            return refuse(ctx, request, inflated_cause(over.amount, max_inflated))
        except (CodecError, ValueError) as exc:
            raise RequestFailed(f"Failed to decode RegisterBrokerBody: {exc}") from exc
        wrapper = body.topic_config_serialize_wrapper or TopicConfigSerializeWrapper()
        filter_servers = body.filter_server_list
    else:
        # before V3_0_11 the body is the topic config wrapper itself
        wrapper = TopicConfigSerializeWrapper.decode(request.body)
        count = len(wrapper.topic_config_table or ())
        if 0 < max_topics < count:
            return refuse(ctx, request, topics_cause(count, max_topics))
    topics = wrapper.topic_config_table
    if topics:
        # the Java side iterates the ConcurrentHashMap it parsed into
        topics = {k: topics[k] for k in concurrent_hashmap_order(topics, 10)}
    result = ns.routes.register_broker(
        # Java would file a broker under a null name; refused here, as a null key breaks every later route listing
        _require(h.cluster_name, "clusterName"),
        _require(h.broker_addr, "brokerAddr"),
        _require(h.broker_name, "brokerName"),
        _require(h.broker_id, "brokerId"),
        h.ha_server_addr,
        topics,
        wrapper.data_version,
        filter_servers,
        ctx.connection,
    )
    header = RegisterBrokerResponseHeader(ha_server_addr=result.ha_server_addr, master_addr=result.master_addr)
    return _ok(request, header, ns.kv.list_namespace(NAMESPACE_ORDER_TOPIC_CONFIG))


def unregister_broker(ctx: NamesrvContext, request: RemotingCommand) -> RemotingCommand:
    h = java_decode_header(request, UnRegisterBrokerRequestHeader)
    ctx.state.routes.unregister_broker(h.cluster_name, h.broker_addr, h.broker_name, _require(h.broker_id, "brokerId"))
    return _ok(request)


def wipe_write_perm_of_broker(ctx: NamesrvContext, request: RemotingCommand) -> RemotingCommand:
    h = java_decode_header(request, WipeWritePermOfBrokerRequestHeader)
    count = ctx.state.routes.wipe_write_perm_of_broker(h.broker_name)
    log.info("wipe write perm of broker[%s], client: %s, %d", h.broker_name, ctx.remote_addr, count)
    return _ok(request, WipeWritePermOfBrokerResponseHeader(wipe_topic_count=count))


def add_write_perm_of_broker(ctx: NamesrvContext, request: RemotingCommand) -> RemotingCommand:
    h = java_decode_header(request, AddWritePermOfBrokerRequestHeader)
    count = ctx.state.routes.add_write_perm_of_broker(h.broker_name)
    log.info("add write perm of broker[%s], client: %s, %d", h.broker_name, ctx.remote_addr, count)
    return _ok(request, AddWritePermOfBrokerResponseHeader(add_topic_count=count))


# -- routes ------------------------------------------------------------------------------


def route_body(view: RouteView, order_topic_conf: str | None, standard_json: bool) -> bytes:
    """TopicRouteData bytes in the dialect the client asked for."""
    data = TopicRouteData(
        order_topic_conf=order_topic_conf,
        queue_datas=[
            QueueData(
                broker_name=q.broker_name,
                read_queue_nums=q.read_queue_nums,
                write_queue_nums=q.write_queue_nums,
                perm=q.perm,
                topic_sys_flag=q.topic_sys_flag,
            )
            for q in view.queue_datas
        ],
        broker_datas=[
            BrokerData(cluster=cluster, broker_name=name, broker_addrs=addrs)
            for cluster, name, addrs in view.broker_datas
        ],
        filter_server_table=view.filter_server_table,
    )
    return data.encode(**route_data_features(MQVersion.V4_9_4 if standard_json else 0, None))


def get_route_info_by_topic(ctx: NamesrvContext, request: RemotingCommand) -> RemotingCommand:
    ns = ctx.state
    h = java_decode_header(request, GetRouteInfoRequestHeader)
    standard = request.version >= MQVersion.V4_9_4 or bool(h.accept_standard_json_only)
    if ns.config.cluster_test:
        standard = False  # ClusterTestRequestProcessor always encodes with fastjson defaults
    body = ns.route_answer(h.topic, standard)
    if body is not None:
        return _ok(request, body=body)
    return request.response(
        ResponseCode.TOPIC_NOT_EXIST,
        remark=f"No topic route info in name server for the topic: {_j(h.topic)}{APPLY_TOPIC_TIP}",
    )


def get_broker_cluster_info(ctx: NamesrvContext, request: RemotingCommand) -> RemotingCommand:
    brokers, clusters = ctx.state.routes.cluster_view()
    info = ClusterInfo(
        broker_addr_table={
            name: BrokerData(cluster=cluster, broker_name=bname, broker_addrs=addrs)
            for name, (cluster, bname, addrs) in brokers.items()
        },
        cluster_addr_table=clusters,
    )
    return _ok(request, body=info.encode())


def _topic_list(topics: list[str], broker_addr: str | None = None) -> bytes:
    return TopicList(topic_list=topics, broker_addr=broker_addr).encode()


def get_all_topic_list(ctx: NamesrvContext, request: RemotingCommand) -> RemotingCommand:
    return _ok(request, body=_topic_list(ctx.state.routes.all_topics()))


def delete_topic_in_namesrv(ctx: NamesrvContext, request: RemotingCommand) -> RemotingCommand:
    h = java_decode_header(request, DeleteTopicFromNamesrvRequestHeader)
    ctx.state.routes.delete_topic(h.topic, h.cluster_name or None)
    return _ok(request)


def get_topics_by_cluster(ctx: NamesrvContext, request: RemotingCommand) -> RemotingCommand:
    h = java_decode_header(request, GetTopicsByClusterRequestHeader)
    return _ok(request, body=_topic_list(ctx.state.routes.topics_by_cluster(h.cluster)))


def get_system_topic_list(ctx: NamesrvContext, request: RemotingCommand) -> RemotingCommand:
    topics, broker_addr = ctx.state.routes.system_topic_list()
    return _ok(request, body=_topic_list(topics, broker_addr))


def get_unit_topic_list(ctx: NamesrvContext, request: RemotingCommand) -> RemotingCommand:
    return _ok(request, body=_topic_list(ctx.state.routes.unit_topics()))


def get_has_unit_sub_topic_list(ctx: NamesrvContext, request: RemotingCommand) -> RemotingCommand:
    return _ok(request, body=_topic_list(ctx.state.routes.has_unit_sub_topics()))


def get_has_unit_sub_ununit_topic_list(ctx: NamesrvContext, request: RemotingCommand) -> RemotingCommand:
    return _ok(request, body=_topic_list(ctx.state.routes.has_unit_sub_ununit_topics()))


# -- configuration ------------------------------------------------------------------------


async def update_namesrv_config(ctx: NamesrvContext, request: RemotingCommand) -> RemotingCommand:
    ns = ctx.state
    log.info("updateConfig called by %s", ctx.remote_addr)
    if request.body is not None:
        too_big = body_refusal(ctx, request)
        if too_big is not None:
            return too_big
        try:
            props = properties.parse_update(request.body)
        except properties.PropertiesError:
            log.error("updateConfig string2Properties error %r", request.body[:200])
            return request.response(ResponseCode.SYSTEM_ERROR, remark="string2Properties error")
        refused = ns.config.refused_key(props)
        if refused is not None:
            log.warning("updateConfig refused, %s in the black list or with a line break (%d keys)",
                        one_line(repr(refused), 200), len(props))
            return request.response(ResponseCode.NO_PERMISSION, remark="Can not update config in black list.")
        ns.update_config(props)
        await ns.save_config()
    return _ok(request)


def get_namesrv_config(ctx: NamesrvContext, request: RemotingCommand) -> RemotingCommand:
    text = properties.dumps(ctx.state.config.to_properties())
    return _ok(request, body=text.encode("utf-8") if text else None)


HANDLERS: dict[int, Handler] = {
    RequestCode.PUT_KV_CONFIG: put_kv_config,
    RequestCode.GET_KV_CONFIG: get_kv_config,
    RequestCode.DELETE_KV_CONFIG: delete_kv_config,
    RequestCode.QUERY_DATA_VERSION: query_data_version,
    RequestCode.REGISTER_BROKER: register_broker,
    RequestCode.UNREGISTER_BROKER: unregister_broker,
    RequestCode.GET_ROUTEINFO_BY_TOPIC: get_route_info_by_topic,
    RequestCode.GET_BROKER_CLUSTER_INFO: get_broker_cluster_info,
    RequestCode.WIPE_WRITE_PERM_OF_BROKER: wipe_write_perm_of_broker,
    RequestCode.ADD_WRITE_PERM_OF_BROKER: add_write_perm_of_broker,
    RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: get_all_topic_list,
    RequestCode.DELETE_TOPIC_IN_NAMESRV: delete_topic_in_namesrv,
    RequestCode.GET_KVLIST_BY_NAMESPACE: get_kv_list_by_namespace,
    RequestCode.GET_TOPICS_BY_CLUSTER: get_topics_by_cluster,
    RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: get_system_topic_list,
    RequestCode.GET_UNIT_TOPIC_LIST: get_unit_topic_list,
    RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST: get_has_unit_sub_topic_list,
    RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: get_has_unit_sub_ununit_topic_list,
    RequestCode.UPDATE_NAMESRV_CONFIG: update_namesrv_config,
    RequestCode.GET_NAMESRV_CONFIG: get_namesrv_config,
}


def build_dispatcher() -> Dispatcher:
    """A fresh dispatch table; handlers find the NameServer in ``ctx.state``. Registrations and the admin
    codes are served behind the NameServer's address allow-lists (:mod:`.gate`)."""
    from .gate import gated

    return Dispatcher({code: gated(code, handler) for code, handler in HANDLERS.items()})


__all__ = ["APPLY_TOPIC_TIP", "HANDLERS", "build_dispatcher", "route_body"]
