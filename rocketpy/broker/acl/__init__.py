"""Plain ACL (``aclEnable=true``): request signatures and permissions as RocketMQ 4.9.8 checks them.

Pure package (no trio): the broker calls :meth:`PlainAccessValidator.check` (:mod:`.validator`)
on every request before dispatching it, and the admin codes call the update methods of
:class:`PlainPermissionManager` (:mod:`.manager`, the ACL files). :mod:`.permission` holds the
errors and permission bits, :mod:`.address` the white address patterns, :mod:`.accounts` the
accounts, the requests and the permission check.

Signing (AclClientRPCHook / AclUtils): the request's extFields, with ``AccessKey`` (and
``SecurityToken``) added, sorted by name; their values concatenated (``Signature``
left out) and the body appended; HmacSHA1 of that with the secret key, Base64.
The broker recomputes it without ``Signature`` and ``_UNIQUE_KEY_QUERY``.

Accounts come from ``<rocketmqHome>/conf/plain_acl.yml`` (Java's ``rocketmq.acl.plain.file``
property moves it; here ``aclPlainFile`` in the broker config, relative to the home or
absolute) and from every ``*.yml``/``*.yaml`` under ``<rocketmqHome>/conf/acl/``. The files
are checked for changes every few seconds and reloaded, as Java's AclFileWatchService does.

A refusal is Java's AclException thrown by the RPC hook: SYSTEM_ERROR with the remark
``org.apache.rocketmq.acl.common.AclException: <message>, <where Java threw it>``.

Which resources a request needs (PlainAccessValidator.parse):

=========================  ===============================================
SEND_MESSAGE(_V2)          topic PUB; a retry topic: its group SUB
CONSUMER_SEND_MSG_BACK     group SUB
PULL_MESSAGE               topic SUB and group SUB
QUERY_MESSAGE              topic SUB
HEART_BEAT                 each consumer group SUB, each subscribed topic SUB
UNREGISTER_CLIENT,         consumer group SUB
GET_CONSUMER_LIST_BY_GROUP
UPDATE_CONSUMER_OFFSET     consumer group SUB, topic SUB
=========================  ===============================================

Groups are checked as their retry topics (``%RETRY%group``) against ``groupPerms`` and
``defaultGroupPerm``; topics against ``topicPerms`` and ``defaultTopicPerm``. Five admin
codes (topic and group create/delete, UPDATE_BROKER_CONFIG) need ``admin: true``. A
global white address, or the account's own white address, skips the signature check.
"""

from __future__ import annotations

# the signature helpers are re-exported: the broker side verifies with them
from ...codecs.acl_signature import (
    ACCESS_KEY,
    SECRET_KEY,
    SECURITY_TOKEN,
    SIGNATURE,
    sign,
    sign_request,
    signature_of,
    signing_content,
)
from ...javacompat.lang import java_split
from .accounts import AccessRequest, OwnedAccess, PlainAccessConfig, check_account, check_perm
from .address import AddressMatcher, address_matcher, expand_ip, is_ipv4, is_ipv6
from .manager import ACL_DIR, DEFAULT_PLAIN_FILE, WATCH_INTERVAL_S, PlainPermissionManager
from .permission import (
    ADMIN_CODES,
    ANY,
    DENY,
    PUB,
    RETRY_PREFIX,
    SUB,
    TRACE_TOPIC,
    UNIQUE_MSG_QUERY_FLAG,
    WHERE_ADMIN,
    WHERE_DEFAULT_PERM,
    WHERE_NO_CONFIG,
    WHERE_NO_KEY,
    WHERE_NO_RESOURCE,
    WHERE_PARSE,
    WHERE_PERM,
    WHERE_SIGNATURE,
    AclError,
    check_permission,
    check_resource_perms,
    commons_split,
    is_retry,
    parse_perm,
    retry_topic,
)
from .validator import PlainAccessValidator, parse_request

__all__ = [
    "ACCESS_KEY",
    "ACL_DIR",
    "ADMIN_CODES",
    "ANY",
    "AccessRequest",
    "AclError",
    "AddressMatcher",
    "DEFAULT_PLAIN_FILE",
    "DENY",
    "OwnedAccess",
    "PUB",
    "PlainAccessConfig",
    "PlainAccessValidator",
    "PlainPermissionManager",
    "RETRY_PREFIX",
    "SECRET_KEY",
    "SECURITY_TOKEN",
    "SIGNATURE",
    "SUB",
    "TRACE_TOPIC",
    "UNIQUE_MSG_QUERY_FLAG",
    "WATCH_INTERVAL_S",
    "WHERE_ADMIN",
    "WHERE_DEFAULT_PERM",
    "WHERE_NO_CONFIG",
    "WHERE_NO_KEY",
    "WHERE_NO_RESOURCE",
    "WHERE_PARSE",
    "WHERE_PERM",
    "WHERE_SIGNATURE",
    "address_matcher",
    "check_account",
    "check_perm",
    "check_permission",
    "check_resource_perms",
    "commons_split",
    "expand_ip",
    "is_ipv4",
    "is_ipv6",
    "is_retry",
    "java_split",
    "parse_perm",
    "parse_request",
    "retry_topic",
    "sign",
    "sign_request",
    "signature_of",
    "signing_content",
]
