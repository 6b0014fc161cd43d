"""The broker's request handlers, one dispatch table (``register_all``), and the send lane beside it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...codecs.codes import RequestCode as R
from ...remoting import Dispatcher
from ...remoting.dispatch import Handler
from . import acl, admin, admin_extra, client, pull, query, reply, send, send_lane, transaction
from .common import deferred

if TYPE_CHECKING:
    from ..controller import BrokerController


def register_all(broker: BrokerController, d: Dispatcher) -> None:
    table: dict[int, Handler] = {
        R.SEND_MESSAGE: send.send_message,
        R.SEND_MESSAGE_V2: send.send_message,
        R.SEND_BATCH_MESSAGE: send.send_message,
        R.CONSUMER_SEND_MSG_BACK: send.consumer_send_msg_back,
        R.SEND_REPLY_MESSAGE: deferred(reply.send_reply_message),
        R.SEND_REPLY_MESSAGE_V2: deferred(reply.send_reply_message),
        R.PULL_MESSAGE: pull.pull_message,
        R.HEART_BEAT: client.heart_beat,
        R.UNREGISTER_CLIENT: client.unregister_client,
        R.CHECK_CLIENT_CONFIG: client.check_client_config,
        R.GET_CONSUMER_LIST_BY_GROUP: client.get_consumer_list_by_group,
        R.QUERY_CONSUMER_OFFSET: client.query_consumer_offset,
        R.UPDATE_CONSUMER_OFFSET: client.update_consumer_offset,
        R.LOCK_BATCH_MQ: client.lock_batch_mq,
        R.UNLOCK_BATCH_MQ: client.unlock_batch_mq,
        R.QUERY_MESSAGE: query.query_message,
        R.VIEW_MESSAGE_BY_ID: query.view_message_by_id,
        R.GET_MAX_OFFSET: query.get_max_offset,
        R.GET_MIN_OFFSET: query.get_min_offset,
        R.GET_EARLIEST_MSG_STORETIME: query.get_earliest_msg_storetime,
        R.SEARCH_OFFSET_BY_TIMESTAMP: query.search_offset_by_timestamp,
        R.END_TRANSACTION: transaction.end_transaction,
        R.UPDATE_AND_CREATE_TOPIC: admin.update_and_create_topic,
        R.DELETE_TOPIC_IN_BROKER: admin.delete_topic,
        R.GET_ALL_TOPIC_CONFIG: admin.get_all_topic_config,
        R.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: admin.update_and_create_subscription_group,
        R.DELETE_SUBSCRIPTIONGROUP: admin.delete_subscription_group,
        R.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: admin.get_all_subscription_group,
        R.GET_ALL_CONSUMER_OFFSET: admin.get_all_consumer_offset,
        R.CLONE_GROUP_OFFSET: admin.clone_group_offset,
        R.GET_ALL_DELAY_OFFSET: admin.get_all_delay_offset,
        R.GET_BROKER_CONFIG: admin.get_broker_config,
        R.UPDATE_BROKER_CONFIG: admin.update_broker_config,
        R.GET_BROKER_RUNTIME_INFO: admin.get_broker_runtime_info,
        R.GET_CONSUME_STATS: admin.get_consume_stats,
        R.GET_CONSUMER_CONNECTION_LIST: admin.get_consumer_connection_list,
        R.GET_PRODUCER_CONNECTION_LIST: admin.get_producer_connection_list,
        R.GET_TOPIC_STATS_INFO: admin.get_topic_stats_info,
        R.QUERY_TOPIC_CONSUME_BY_WHO: admin.query_topic_consume_by_who,
        R.GET_CONSUMER_RUNNING_INFO: deferred(admin.get_consumer_running_info),
        R.CONSUME_MESSAGE_DIRECTLY: deferred(admin.consume_message_directly),
        R.INVOKE_BROKER_TO_RESET_OFFSET: deferred(admin.invoke_broker_to_reset_offset),
        R.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: deferred(admin_extra.get_consumer_status),
        R.GET_ALL_PRODUCER_INFO: admin_extra.get_all_producer_info,
        R.QUERY_CONSUME_TIME_SPAN: admin_extra.query_consume_time_span,
        R.GET_SYSTEM_TOPIC_LIST_FROM_BROKER: admin_extra.get_system_topic_list_from_broker,
        R.CLEAN_EXPIRED_CONSUMEQUEUE: admin_extra.clean_expired_consume_queue,
        R.DELETE_EXPIRED_COMMITLOG: admin_extra.delete_expired_commit_log,
        R.CLEAN_UNUSED_TOPIC: admin_extra.clean_unused_topic,
        R.QUERY_CORRECTION_OFFSET: admin_extra.query_correction_offset,
        R.VIEW_BROKER_STATS_DATA: admin_extra.view_broker_stats_data,
        R.GET_BROKER_CONSUME_STATS: admin_extra.get_broker_consume_stats,
        R.QUERY_CONSUME_QUEUE: admin_extra.query_consume_queue,
        R.RESUME_CHECK_HALF_MESSAGE: deferred(admin_extra.resume_check_half_message),
        R.UPDATE_AND_CREATE_ACL_CONFIG: acl.update_and_create_acl_config,
        R.DELETE_ACL_CONFIG: acl.delete_acl_config,
        R.GET_BROKER_CLUSTER_ACL_INFO: acl.get_broker_cluster_acl_info,
        R.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: acl.update_global_white_addrs_config,
    }
    for code, handler in table.items():
        d.register(code, handler)
    # plain SEND_MESSAGE(_V2) frames are offered to the send lane first, undecoded (the accelerated build's
    # fast form of send.send_message, which stays the reference and answers whatever the lane passes on)
    if send_lane.available() and broker.dledger is None:  # DLedger appends go through the member
        d.fast_path = send_lane.SendLane(broker)
