"""Administration requests (a subset of Java's MQAdminExt / DefaultMQAdminExtImpl).

An ``Admin`` is a client instance without producers or consumers: it asks the name
server for routes and cluster membership and the brokers for topics, groups, stats,
messages and offsets, with the same requests mqadmin sends.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from ..clock import now_ms
from ..codecs import RemotingCommand, RequestCode, ResponseCode
from ..codecs.bodies import (
    BrokerStatsData,
    ClusterInfo,
    ConsumeMessageDirectlyResult,
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    ConsumeStatsList,
    GroupList,
    KVTable,
    MessageQueue,
    ProducerConnection,
    ProducerTableInfo,
    QueryConsumeQueueResponseBody,
    ResetOffsetBody,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicRouteData,
    TopicStatsTable,
)
from ..codecs.codes import LanguageCode, MessageConst, MixAll, PullStatus, PullSysFlag
from ..codecs.headers import (
    AddWritePermOfBrokerRequestHeader,
    CloneGroupOffsetRequestHeader,
    ConsumeMessageDirectlyResultRequestHeader,
    CreateAccessConfigRequestHeader,
    CreateTopicRequestHeader,
    DeleteAccessConfigRequestHeader,
    DeleteKVConfigRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    DeleteTopicRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumeStatsInBrokerHeader,
    GetConsumeStatsRequestHeader,
    GetKVConfigRequestHeader,
    GetKVListByNamespaceRequestHeader,
    GetProducerConnectionListRequestHeader,
    GetTopicStatsInfoRequestHeader,
    PullMessageRequestHeader,
    PutKVConfigRequestHeader,
    QueryConsumeQueueRequestHeader,
    QueryMessageRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    ResetOffsetRequestHeader,
    SearchOffsetRequestHeader,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
    ViewBrokerStatsDataRequestHeader,
    ViewMessageRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
)
from ..codecs.message import MessageExt, decode_message, decode_messages, decode_offset_msg_id
from ..remoting import RemotingError
from .api import check
from .config import ClientConfig
from .errors import MQBrokerError, MQClientError
from .instance import ClientInstance
from .route import MASTER_ID


class Admin:
    """``async with Admin(namesrv="127.0.0.1:9876") as admin: await admin.cluster_info()``."""

    def __init__(self, namesrv: str | None = None, *, config: ClientConfig | None = None,
                 timeout: float = 5.0) -> None:
        if config is None:
            config = ClientConfig(namesrv_addr=namesrv) if namesrv else ClientConfig()
            config.instance_name = str(now_ms())
        self.client = ClientInstance(config)
        self.timeout = timeout

    async def __aenter__(self) -> Admin:
        await self.client.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.aclose()

    async def _ns(self, code: int, header: Any = None) -> RemotingCommand:
        req = RemotingCommand.request(code, header)

        async def call(addr: str) -> RemotingCommand:
            return check(await self.client.api.invoke(addr, req, self.timeout), addr)

        return await self.client.namesrv_invoke(call)

    async def _broker(self, addr: str, code: int, header: Any = None, body: bytes | None = None,
                      ok: tuple[int, ...] = (), language: LanguageCode | None = None) -> RemotingCommand:
        req = RemotingCommand.request(code, header, body)
        if language is not None:
            req.language = language
        return check(await self.client.api.invoke(addr, req, self.timeout), addr, *ok)

    async def master_and_slave_addrs(self, cluster: str) -> list[str]:
        """Every broker address of ``cluster``, slaves too (CommandUtil.fetchMasterAndSlaveAddrByClusterName)."""
        info = await self.cluster_info()
        names = (info.cluster_addr_table or {}).get(cluster)
        if names is None:
            raise MQClientError("Make sure the specified clusterName exists or the name server connected to is "
                                "correct.")
        out: list[str] = []
        for name in sorted(names):
            bd = (info.broker_addr_table or {}).get(name)
            if bd is not None:
                out.extend(addr for _bid, addr in sorted((bd.broker_addrs or {}).items()))
        return out

    async def consume_message_directly(self, group: str, client_id: str, msg_id: str,
                                       topic: str | None = None) -> ConsumeMessageDirectlyResult:
        """CONSUME_MESSAGE_DIRECTLY through the broker that stored the message: the client consumes it once more,
        outside its queue (mqadmin's queryMsgById/queryMsgByUniqueKey -g -d). With ``topic`` the id may be a
        client id (UNIQ_KEY); the client is then sent the message's offset id, as Java's admin does."""
        msg = await self.view_message(msg_id, topic)
        if topic is not None and msg.properties.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX):
            msg_id = msg.offset_msg_id
        header = ConsumeMessageDirectlyResultRequestHeader(consumer_group=group, client_id=client_id, msg_id=msg_id)
        req = RemotingCommand.request(RequestCode.CONSUME_MESSAGE_DIRECTLY, header)
        resp = check(await self.client.api.invoke(msg.store_host, req, self.timeout * 3), msg.store_host)
        return ConsumeMessageDirectlyResult.decode(resp.body or b"{}")

    # -- ACL (the four ACL codes of AdminBrokerProcessor) -------------------------------------------
    async def create_and_update_plain_access_config(self, addr: str, config: dict[str, Any]) -> None:
        """UPDATE_AND_CREATE_ACL_CONFIG: ``config`` holds PlainAccessConfig's fields (accessKey, secretKey,
        whiteRemoteAddress, admin, defaultTopicPerm, defaultGroupPerm, topicPerms/groupPerms as lists)."""
        def joined(items: list[str] | None) -> str | None:
            return None if items is None else ",".join(items)

        header = CreateAccessConfigRequestHeader(
            access_key=config.get("accessKey"), secret_key=config.get("secretKey"),
            white_remote_address=config.get("whiteRemoteAddress"), admin=bool(config.get("admin", False)),
            default_topic_perm=config.get("defaultTopicPerm"), default_group_perm=config.get("defaultGroupPerm"),
            topic_perms=joined(config.get("topicPerms")), group_perms=joined(config.get("groupPerms")))
        await self._broker(addr, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, header)

    async def delete_plain_access_config(self, addr: str, access_key: str) -> None:
        await self._broker(addr, RequestCode.DELETE_ACL_CONFIG, DeleteAccessConfigRequestHeader(access_key=access_key))

    async def update_global_white_addr_config(self, addr: str, addresses: str, acl_file: str | None = None) -> None:
        header = UpdateGlobalWhiteAddrsConfigRequestHeader(global_white_addrs=addresses, acl_file_full_path=acl_file)
        await self._broker(addr, RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, header)

    async def broker_cluster_acl_info(self, addr: str) -> dict[str, Any]:
        """GET_BROKER_CLUSTER_ACL_INFO as ClusterAclVersionInfo: clusterName, brokerName, brokerAddr,
        aclConfigDataVersion and allAclConfigDataVersion (file -> {counter, timestamp})."""
        ext = (await self._broker(addr, RequestCode.GET_BROKER_CLUSTER_ACL_INFO)).ext_fields or {}
        try:
            version = json.loads(ext["version"]) if ext.get("version") else None
            every = json.loads(ext["allAclFileVersion"]) if ext.get("allAclFileVersion") else {}
        except ValueError as exc:
            raise MQClientError(f"bad ACL version info from {addr}: {exc}") from None
        return {"clusterName": ext.get("clusterName"), "brokerName": ext.get("brokerName"),
                "brokerAddr": ext.get("brokerAddr"), "aclConfigDataVersion": version,
                "allAclConfigDataVersion": every}

    # -- name server views ---------------------------------------------------------------------
    async def cluster_info(self) -> ClusterInfo:
        return ClusterInfo.decode((await self._ns(RequestCode.GET_BROKER_CLUSTER_INFO)).body or b"{}")

    async def topic_list(self) -> list[str]:
        return TopicList.decode((await self._ns(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)).body or b"{}"
                                ).topic_list

    async def topic_route(self, topic: str) -> TopicRouteData:
        route = await self.client.fetch_route(topic)
        if route is None:
            raise MQClientError(f"No topic route info in name server for the topic: {topic}",
                                ResponseCode.TOPIC_NOT_EXIST)
        return route

    async def master_addrs(self, cluster: str | None = None, broker_addr: str | None = None) -> list[str]:
        """``-b addr`` as given, else every master of ``cluster`` (mqadmin's -b / -c)."""
        if broker_addr:
            return [broker_addr]
        info = await self.cluster_info()
        out: list[str] = []
        for name in sorted((info.cluster_addr_table or {}).get(cluster or "", []) if cluster else
                           (info.broker_addr_table or {})):
            bd = (info.broker_addr_table or {}).get(name)
            master = bd.master_addr() if bd is not None else None
            if master:
                out.append(master)
        if not out:
            raise MQClientError(f"no master broker found (cluster {cluster!r})")
        return out

    async def topic_masters(self, topic: str) -> list[tuple[str, str]]:
        """(broker name, master address) of each broker serving ``topic``, from a fresh route lookup."""
        return await self._topic_masters(topic)

    async def _topic_masters(self, topic: str) -> list[tuple[str, str]]:
        route = await self.topic_route(topic)
        return [(bd.broker_name or "", bd.master_addr() or "") for bd in route.broker_datas or [] if bd.master_addr()]

    # -- topics --------------------------------------------------------------------------------------
    async def create_topic(self, addr: str, config: TopicConfig) -> None:
        h = CreateTopicRequestHeader(
            topic=config.topic_name, default_topic=MixAll.AUTO_CREATE_TOPIC_KEY_TOPIC,
            read_queue_nums=config.read_queue_nums, write_queue_nums=config.write_queue_nums, perm=config.perm,
            topic_filter_type=str(config.topic_filter_type or "SINGLE_TAG"), topic_sys_flag=config.topic_sys_flag,
            order=config.order)
        await self._broker(addr, RequestCode.UPDATE_AND_CREATE_TOPIC, h)

    async def delete_topic(self, topic: str, cluster: str | None = None) -> None:
        for addr in await self.master_addrs(cluster):
            await self._broker(addr, RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic=topic))
        h = DeleteTopicFromNamesrvRequestHeader(topic=topic, cluster_name=cluster)
        for ns in self.client.config.namesrv_list:
            req = RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_NAMESRV, h)
            check(await self.client.api.invoke(ns, req, self.timeout), ns)

    async def topic_stats(self, topic: str) -> TopicStatsTable:
        merged = TopicStatsTable()
        for _, addr in await self._topic_masters(topic):
            h = GetTopicStatsInfoRequestHeader(topic=topic)
            resp = await self._broker(addr, RequestCode.GET_TOPIC_STATS_INFO, h)
            merged.offset_table.update(TopicStatsTable.decode(resp.body or b"{}").offset_table)
        return merged

    # -- brokers ----------------------------------------------------------------------------------------
    async def broker_runtime_info(self, addr: str) -> dict[str, str]:
        return KVTable.decode((await self._broker(addr, RequestCode.GET_BROKER_RUNTIME_INFO)).body or b"{}").table

    async def broker_config(self, addr: str) -> dict[str, str]:
        text = ((await self._broker(addr, RequestCode.GET_BROKER_CONFIG)).body or b"").decode("utf-8")
        out = {}
        for line in text.splitlines():
            if "=" in line and not line.lstrip().startswith("#"):
                k, _, v = line.partition("=")
                out[k.strip()] = v.strip()
        return out

    async def update_broker_config(self, addr: str, props: dict[str, str], credential: str | None = None) -> None:
        """UPDATE_BROKER_CONFIG; a rocketpy broker also wants its adminCredential (Java's takes none)."""
        from ..javacompat import properties

        req = RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, None, properties.dumps(props).encode("utf-8"))
        if credential:
            req.ext_fields = {**(req.ext_fields or {}), "adminCredential": credential}
        check(await self.client.api.invoke(addr, req, self.timeout), addr)

    async def broker_consume_stats(self, addr: str, is_order: bool = False) -> ConsumeStatsList:
        resp = await self._broker(addr, RequestCode.GET_BROKER_CONSUME_STATS, GetConsumeStatsInBrokerHeader(
            is_order=is_order))
        return ConsumeStatsList.decode(resp.body or b"{}")

    async def topic_consumed_by(self, addr: str, topic: str) -> list[str]:
        resp = await self._broker(addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO,
                                  QueryTopicConsumeByWhoRequestHeader(topic=topic))
        return GroupList.decode(resp.body or b"{}").group_list

    async def clone_group_offset(self, addr: str, src: str, dest: str, topic: str, offline: bool) -> None:
        await self._broker(addr, RequestCode.CLONE_GROUP_OFFSET, CloneGroupOffsetRequestHeader(
            src_group=src, dest_group=dest, topic=topic, offline=offline))

    async def broker_stats_data(self, addr: str, stats_name: str, stats_key: str) -> BrokerStatsData:
        resp = await self._broker(addr, RequestCode.VIEW_BROKER_STATS_DATA, ViewBrokerStatsDataRequestHeader(
            stats_name=stats_name, stats_key=stats_key))
        return BrokerStatsData.decode(resp.body or b"{}")

    async def sub_group_config(self, addr: str, group: str) -> SubscriptionGroupConfig | None:
        """What examineSubscriptionGroupConfig does: every group of the broker, then this one."""
        resp = await self._broker(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        return SubscriptionGroupWrapper.decode(resp.body or b"{}").subscription_group_table.get(group)

    async def consumer_running_info(self, group: str, client_id: str, jstack: bool = False) -> ConsumerRunningInfo:
        """GET_CONSUMER_RUNNING_INFO through a broker of the group's retry topic (the broker asks the client)."""
        route = await self.topic_route(MixAll.RETRY_GROUP_TOPIC_PREFIX + group)
        addr = next((a for bd in route.broker_datas or [] for k, a in sorted((bd.broker_addrs or {}).items())), None)
        if addr is None:
            raise MQClientError(f"no broker serves the consumer group {group}")
        resp = await self._broker(addr, RequestCode.GET_CONSUMER_RUNNING_INFO, GetConsumerRunningInfoRequestHeader(
            consumer_group=group, client_id=client_id, jstack_enable=jstack))
        return ConsumerRunningInfo.decode(resp.body or b"{}")

    async def all_producer_info(self, addr: str) -> ProducerTableInfo:
        return ProducerTableInfo.decode((await self._broker(addr, RequestCode.GET_ALL_PRODUCER_INFO)).body or b"{}")

    async def query_consume_queue(self, addr: str, topic: str, queue_id: int, index: int, count: int,
                                  group: str | None = None) -> QueryConsumeQueueResponseBody:
        resp = await self._broker(addr, RequestCode.QUERY_CONSUME_QUEUE, QueryConsumeQueueRequestHeader(
            topic=topic, queue_id=queue_id, index=index, count=count, consumer_group=group))
        return QueryConsumeQueueResponseBody.decode(resp.body or b"{}")

    async def user_topic_configs(self, addr: str, special: bool = False) -> dict[str, TopicConfig]:
        """getUserTopicConfig: the broker's topics but its system ones (and %RETRY%/%DLQ% unless ``special``)."""
        table = TopicConfigSerializeWrapper.decode(
            (await self._broker(addr, RequestCode.GET_ALL_TOPIC_CONFIG)).body or b"{}").topic_config_table
        system = set(TopicList.decode(
            (await self._broker(addr, RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER)).body or b"{}").topic_list)
        return {t: c for t, c in table.items() if t not in system and (special or not t.startswith(
            (MixAll.RETRY_GROUP_TOPIC_PREFIX, MixAll.DLQ_GROUP_TOPIC_PREFIX)))}

    async def user_sub_groups(self, addr: str) -> dict[str, SubscriptionGroupConfig]:
        """getUserSubscriptionGroup: the broker's groups but the system ones."""
        system = {MixAll.DEFAULT_CONSUMER_GROUP, MixAll.DEFAULT_PRODUCER_GROUP, MixAll.TOOLS_CONSUMER_GROUP,
                  MixAll.FILTERSRV_CONSUMER_GROUP, MixAll.MONITOR_CONSUMER_GROUP, MixAll.CLIENT_INNER_PRODUCER_GROUP,
                  MixAll.SELF_TEST_PRODUCER_GROUP, MixAll.SELF_TEST_CONSUMER_GROUP, MixAll.ONS_HTTP_PROXY_GROUP,
                  MixAll.CID_ONSAPI_PERMISSION_GROUP, MixAll.CID_ONSAPI_OWNER_GROUP, MixAll.CID_ONSAPI_PULL_GROUP,
                  MixAll.CID_SYS_RMQ_TRANS}
        resp = await self._broker(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        table = SubscriptionGroupWrapper.decode(resp.body or b"{}").subscription_group_table
        return {g: c for g, c in table.items() if g not in system and not g.startswith(MixAll.CID_RMQ_SYS_PREFIX)}

    # -- name servers -------------------------------------------------------------------------------------
    async def put_kv_config(self, namespace: str, key: str, value: str, addr: str | None = None) -> None:
        """PUT_KV_CONFIG on the current name server, or on ``addr``."""
        header = PutKVConfigRequestHeader(namespace=namespace, key=key, value=value)
        if addr is None:
            await self._ns(RequestCode.PUT_KV_CONFIG, header)
            return
        req = RemotingCommand.request(RequestCode.PUT_KV_CONFIG, header)
        check(await self.client.api.invoke(addr, req, self.timeout), addr)

    async def get_kv_config(self, namespace: str, key: str) -> str | None:
        resp = await self._ns(RequestCode.GET_KV_CONFIG, GetKVConfigRequestHeader(namespace=namespace, key=key))
        return (resp.ext_fields or {}).get("value")

    async def broker_chore(self, addr: str, code: int) -> bool:
        """A broker housekeeping request (CLEAN_EXPIRED_CONSUMEQUEUE, ...): did it answer SUCCESS?"""
        await self._broker(addr, code)
        return True

    async def kv_list(self, namespace: str) -> dict[str, str]:
        """GET_KVLIST_BY_NAMESPACE: every key and value of ``namespace`` ({} when it has none)."""
        req = RemotingCommand.request(RequestCode.GET_KVLIST_BY_NAMESPACE,
                                      GetKVListByNamespaceRequestHeader(namespace=namespace))

        async def call(addr: str) -> RemotingCommand:
            return check(await self.client.api.invoke(addr, req, self.timeout), addr, ResponseCode.QUERY_NOT_FOUND)

        resp = await self.client.namesrv_invoke(call)
        if resp.code == ResponseCode.QUERY_NOT_FOUND:
            return {}
        return KVTable.decode(resp.body or b"{}").table

    async def delete_kv_config(self, namespace: str, key: str) -> None:
        await self._ns(RequestCode.DELETE_KV_CONFIG, DeleteKVConfigRequestHeader(namespace=namespace, key=key))

    async def namesrv_config(self, addr: str) -> dict[str, str]:
        from ..javacompat import properties

        req = RemotingCommand.request(RequestCode.GET_NAMESRV_CONFIG)
        resp = check(await self.client.api.invoke(addr, req, self.timeout), addr)
        return properties.loads((resp.body or b"").decode("utf-8"))

    async def update_namesrv_config(self, addr: str, props: dict[str, str]) -> None:
        from ..javacompat import properties

        req = RemotingCommand.request(RequestCode.UPDATE_NAMESRV_CONFIG, None,
                                      properties.dumps(props).encode("utf-8"))
        check(await self.client.api.invoke(addr, req, self.timeout), addr)

    async def write_perm_of_broker(self, addr: str, broker_name: str, wipe: bool) -> int:
        """WIPE/ADD_WRITE_PERM_OF_BROKER on one name server: how many topics it changed."""
        if wipe:
            req = RemotingCommand.request(RequestCode.WIPE_WRITE_PERM_OF_BROKER,
                                          WipeWritePermOfBrokerRequestHeader(broker_name=broker_name))
        else:
            req = RemotingCommand.request(RequestCode.ADD_WRITE_PERM_OF_BROKER,
                                          AddWritePermOfBrokerRequestHeader(broker_name=broker_name))
        resp = check(await self.client.api.invoke(addr, req, self.timeout), addr)
        fields = resp.ext_fields or {}
        return int(fields.get("wipeTopicCount") or fields.get("addTopicCount") or 0)

    # -- groups ------------------------------------------------------------------------------------------
    async def update_sub_group(self, addr: str, config: SubscriptionGroupConfig) -> None:
        await self._broker(addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=config.encode())

    async def delete_sub_group(self, addr: str, group: str, remove_offset: bool = False) -> None:
        h = DeleteSubscriptionGroupRequestHeader(group_name=group, remove_offset=remove_offset)
        await self._broker(addr, RequestCode.DELETE_SUBSCRIPTIONGROUP, h)

    async def consume_stats(self, group: str, topic: str | None = None) -> ConsumeStats:
        merged = ConsumeStats()
        for _, addr in await self._topic_masters(MixAll.get_retry_topic(group)):
            h = GetConsumeStatsRequestHeader(consumer_group=group, topic=topic)
            stats = ConsumeStats.decode((await self._broker(addr, RequestCode.GET_CONSUME_STATS, h)).body or b"{}")
            merged.offset_table.update(stats.offset_table)
            merged.consume_tps += stats.consume_tps
        return merged

    async def consumer_connection(self, group: str, broker_addr: str | None = None) -> ConsumerConnection:
        """The group's clients as a master of its retry topic knows them (or as ``broker_addr`` does)."""
        if broker_addr:
            h = GetConsumerConnectionListRequestHeader(consumer_group=group)
            resp = await self._broker(broker_addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, h)
            return ConsumerConnection.decode(resp.body or b"{}")
        for _, addr in await self._topic_masters(MixAll.get_retry_topic(group)):
            h = GetConsumerConnectionListRequestHeader(consumer_group=group)
            resp = await self._broker(addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, h)
            return ConsumerConnection.decode(resp.body or b"{}")
        raise MQClientError(f"Not found the consumer group connection, {group}")

    async def producer_connection(self, group: str, topic: str) -> ProducerConnection:
        for _, addr in await self._topic_masters(topic):
            h = GetProducerConnectionListRequestHeader(producer_group=group)
            resp = await self._broker(addr, RequestCode.GET_PRODUCER_CONNECTION_LIST, h)
            return ProducerConnection.decode(resp.body or b"{}")
        raise MQClientError(f"Not found the producer group connection, {group}")

    # -- messages ------------------------------------------------------------------------------------------
    async def view_message(self, msg_id: str, topic: str | None = None) -> MessageExt:
        """By offset msg id (store host + commit log offset); with ``topic``, a client (UNIQ_KEY) id works too."""
        try:
            ip, port, offset = decode_offset_msg_id(msg_id)
            if not 0 < port < 65536:
                raise ValueError(f"port {port}")
        except Exception:
            ip, port, offset = "", 0, -1
        if offset >= 0:
            try:
                resp = await self._broker(f"{ip}:{port}", RequestCode.VIEW_MESSAGE_BY_ID,
                                          ViewMessageRequestHeader(offset=offset))
                return decode_message(resp.body or b"")
            except (MQClientError, RemotingError):
                if topic is None:
                    raise
        if topic is None:
            raise MQClientError(f"{msg_id} is not an offset msg id; give the topic to look up a client id")
        found = await self.query_messages(topic, msg_id, 32, 0, 2**63 - 1, unique=True)
        if not found:
            raise MQClientError(f"query message by id finished, but no message. {msg_id}")
        return found[0]

    async def view_message_at(self, addr: str, commit_log_offset: int) -> MessageExt:
        """VIEW_MESSAGE_BY_ID on broker ``addr`` for the message at ``commit_log_offset``."""
        resp = await self._broker(addr, RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(
            offset=commit_log_offset))
        return decode_message(resp.body or b"")

    async def query_messages(self, topic: str, key: str, max_num: int = 64, begin: int = 0,
                             end: int = 2**63 - 1, unique: bool = False) -> list[MessageExt]:
        out: list[MessageExt] = []
        for _, addr in await self._topic_masters(topic):
            h = QueryMessageRequestHeader(topic=topic, key=key, max_num=max_num, begin_timestamp=begin,
                                          end_timestamp=end)
            req = RemotingCommand.request(RequestCode.QUERY_MESSAGE, h)
            if unique:
                req.ext_fields = {**(req.ext_fields or {}), MixAll.UNIQUE_MSG_QUERY_FLAG: "true"}
            resp = await self.client.api.invoke(addr, req, self.timeout)
            if resp.code == ResponseCode.QUERY_NOT_FOUND:
                continue
            check(resp, addr)
            for m in decode_messages(resp.body or b""):
                if (unique and m.uniq_key == key) or (not unique and key in m.keys):
                    out.append(m)
        return out

    async def pull(self, mq: MessageQueue, offset: int, max_nums: int = 32) -> tuple[list[MessageExt], int]:
        """Read messages at ``offset`` without a group position (queryMsgByOffset, printMsg)."""
        await self.client.update_topic_route(mq.topic or "")
        addr = self.client.find_broker(mq.broker_name or "", MASTER_ID)
        if addr is None:
            route = await self.topic_route(mq.topic or "")
            addr = next((bd.master_addr() for bd in route.broker_datas or [] if bd.broker_name == mq.broker_name),
                        None)
        if addr is None:
            raise MQClientError(f"The broker[{mq.broker_name}] not exist")
        h = PullMessageRequestHeader(
            consumer_group=MixAll.TOOLS_CONSUMER_GROUP, topic=mq.topic, queue_id=mq.queue_id, queue_offset=offset,
            max_msg_nums=max_nums, sys_flag=PullSysFlag.build_sys_flag(False, False, True, False),
            commit_offset=0, suspend_timeout_millis=0, subscription="*", sub_version=0, expression_type="TAG",
            bname=mq.broker_name)
        result, body = await self.client.api.pull(addr, h, self.timeout)
        if result.pull_status != PullStatus.FOUND:
            return [], result.next_begin_offset
        msgs = decode_messages(body)
        for m in msgs:  # as Java's PullAPIWrapper.processPullResult: the queue's bounds ride along
            m.properties[MessageConst.PROPERTY_MIN_OFFSET] = str(result.min_offset)
            m.properties[MessageConst.PROPERTY_MAX_OFFSET] = str(result.max_offset)
        return msgs, result.next_begin_offset

    async def search_offset(self, mq: MessageQueue, timestamp: int) -> int:
        """SEARCH_OFFSET_BY_TIMESTAMP on the queue's master: the offset of the first message stored at or after."""
        masters = dict(await self._topic_masters(mq.topic or ""))
        addr = masters.get(mq.broker_name or "")
        if not addr:
            raise MQClientError(f"The broker[{mq.broker_name}] not exist")
        resp = await self._broker(addr, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, SearchOffsetRequestHeader(
            topic=mq.topic, queue_id=mq.queue_id, timestamp=timestamp))
        return int((resp.ext_fields or {}).get("offset", 0))

    async def queue_bounds(self, topic: str) -> dict[MessageQueue, tuple[int, int]]:
        stats = await self.topic_stats(topic)
        return {mq: (o.min_offset, o.max_offset) for mq, o in stats.offset_table.items()}

    async def reset_offset_by_time(self, group: str, topic: str, timestamp: int, force: bool = True,
                                   cpp: bool = False, offline: bool = True) -> dict[MessageQueue, int]:
        """INVOKE_BROKER_TO_RESET_OFFSET on every master of the topic. ``cpp`` (mqadmin's -c): the request says
        language CPP, so the broker tells the clients the new offsets in the C++ client's body layout.
        ``offline``: where no client of the group is online, write the offsets on the broker directly
        (:meth:`reset_offset_old`); else the broker's CONSUMER_NOT_ONLINE is raised, as mqadmin sees it."""
        table: dict[MessageQueue, int] = {}
        for name, addr in await self._topic_masters(topic):
            h = ResetOffsetRequestHeader(topic=topic, group=group, timestamp=timestamp, is_force=force)
            try:
                resp = await self._broker(addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, h,
                                          language=LanguageCode.CPP if cpp else None)
            except MQBrokerError as exc:
                if exc.response_code != ResponseCode.CONSUMER_NOT_ONLINE or not offline:
                    raise
                stats = await self._reset_offline(name, addr, group, topic, timestamp, force)
                table.update({s.mq: s.rollback_offset for s in stats if s.updated})
                continue
            if resp.body:
                table.update(ResetOffsetBody.decode(resp.body).offset_table or {})
        return table

    async def reset_offset_old(self, group: str, topic: str, timestamp: int, force: bool = True) -> list[RollbackStats]:
        """mqadmin's fallback for a group nobody consumes with now (resetOffsetByTimestampOld): on every master
        of the topic, each queue's offset is set to the one found for ``timestamp`` (-1: the max offset)."""
        out: list[RollbackStats] = []
        for name, addr in await self._topic_masters(topic):
            out += await self._reset_offline(name, addr, group, topic, timestamp, force)
        return out

    async def _reset_offline(self, broker_name: str, addr: str, group: str, topic: str, timestamp: int,
                             force: bool) -> list[RollbackStats]:
        from .java_text import java_hash_order

        api = self.client.api
        h = GetConsumeStatsRequestHeader(consumer_group=group)
        stats = ConsumeStats.decode((await self._broker(addr, RequestCode.GET_CONSUME_STATS, h)).body or b"{}")
        # the group's committed queues of the topic on this broker, in the HashMap order Java walks them
        marks = {mq: (w.broker_offset, w.consumer_offset) for mq, w in stats.offset_table.items() if mq.topic == topic}
        queues = java_hash_order(list(marks))
        if not queues:  # never consumed here: every readable queue, from its min offset
            h_stats = GetTopicStatsInfoRequestHeader(topic=topic)
            resp = await self._broker(addr, RequestCode.GET_TOPIC_STATS_INFO, h_stats)
            bounds = TopicStatsTable.decode(resp.body or b"{}").offset_table
            queues = sorted((mq for mq in bounds if mq.broker_name == broker_name), key=lambda q: q.queue_id)
            marks = {mq: (bounds[mq].max_offset, bounds[mq].min_offset) for mq in queues}
        out = []
        for mq in queues:
            broker_offset, consumer_offset = marks[mq]
            if timestamp == -1:
                target = await api.get_max_offset(addr, mq)
            else:
                target = await api.search_offset(addr, mq, timestamp)
            updated = force or target <= consumer_offset
            if updated:
                await api.update_consumer_offset(addr, group, mq, target)
            out.append(RollbackStats(mq, broker_offset, consumer_offset, target,
                                     target if updated else consumer_offset, updated))
        return out


@dataclasses.dataclass
class RollbackStats:
    """One queue of the offline reset (Java's RollbackStats), and whether its offset was written."""

    mq: MessageQueue
    broker_offset: int
    consumer_offset: int
    timestamp_offset: int
    rollback_offset: int
    updated: bool


__all__ = ["Admin", "MQBrokerError"]
