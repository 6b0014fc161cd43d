"""Plain ACL (``aclEnable=true``): request signatures and permissions as RocketMQ 4.9.8 checks them.

Pure module (no trio): the broker calls :meth:`PlainAccessValidator.check` on every
request before dispatching it, and the admin codes call the update methods.

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

import dataclasses
import hmac
import ipaddress
import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import yaml

from ..codecs.acl_signature import (  # noqa: F401 (re-exported: the broker side verifies with them)
    ACCESS_KEY,
    SECRET_KEY,
    SECURITY_TOKEN,
    SIGNATURE,
    sign,
    sign_request,
    signature_of,
    signing_content,
)
from ..codecs.codes import RequestCode as R
from ..codecs.javalang import hashmap_order

log = logging.getLogger("rocketpy.broker.acl")

UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"
RETRY_PREFIX = "%RETRY%"
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"

DEFAULT_PLAIN_FILE = "conf/plain_acl.yml"
ACL_DIR = "conf/acl"
WATCH_INTERVAL_S = 5.0

# ---------------------------------------------------------------------------
# Signatures
# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------

_MANAGER = "org.apache.rocketmq.acl.plain.PlainPermissionManager"
_VALIDATOR = "org.apache.rocketmq.acl.plain.PlainAccessValidator"
WHERE_PARSE = f"{_VALIDATOR}.parse(PlainAccessValidator.java:134)"
WHERE_ADMIN = f"{_MANAGER}.checkPerm(PlainPermissionManager.java:581)"
WHERE_DEFAULT_PERM = f"{_MANAGER}.checkPerm(PlainPermissionManager.java:606)"
WHERE_PERM = f"{_MANAGER}.checkPerm(PlainPermissionManager.java:611)"
WHERE_NO_KEY = f"{_MANAGER}.validate(PlainPermissionManager.java:664)"
WHERE_NO_CONFIG = f"{_MANAGER}.validate(PlainPermissionManager.java:668)"
WHERE_NO_RESOURCE = f"{_MANAGER}.validate(PlainPermissionManager.java:675)"
WHERE_SIGNATURE = f"{_MANAGER}.validate(PlainPermissionManager.java:684)"


class AclError(Exception):
    """Java's AclException. ``remote_desc`` is the remark a broker answers with
    (RemotingHelper.exceptionSimpleDesc: the exception, then where it was thrown)."""

    JAVA_CLASS = "org.apache.rocketmq.acl.common.AclException"

    def __init__(self, message: str | None, where: str = "") -> None:
        super().__init__(message or "")
        self.message = message
        self.where = where

    @property
    def remote_desc(self) -> str:
        text = self.JAVA_CLASS if self.message is None else f"{self.JAVA_CLASS}: {self.message}"
        return f"{text}, {self.where}" if self.where else text


# ---------------------------------------------------------------------------
# Permissions
# ---------------------------------------------------------------------------

DENY = 1
ANY = 1 << 1
PUB = 1 << 2
SUB = 1 << 3

#: request codes that need an admin account (Permission.ADMIN_CODE)
ADMIN_CODES = frozenset(
    {
        R.UPDATE_AND_CREATE_TOPIC,
        R.UPDATE_BROKER_CONFIG,
        R.DELETE_TOPIC_IN_BROKER,
        R.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        R.DELETE_SUBSCRIPTIONGROUP,
    }
)


def check_permission(needed: int, owned: int) -> bool:
    if owned & DENY:
        return False
    if needed & ANY:
        return bool(owned & PUB or owned & SUB)
    return bool(needed & owned)


def parse_perm(text: str | None) -> int:
    """Permission.parsePermFromString: PUB, SUB, PUB|SUB, SUB|PUB; anything else DENY."""
    if text is None:
        return DENY
    return {"PUB": PUB, "SUB": SUB, "PUB|SUB": PUB | SUB, "SUB|PUB": PUB | SUB}.get(text.strip(), DENY)


def commons_split(text: str, chars: str) -> list[str]:
    """StringUtils.split(text, chars): split on any of ``chars``, no empty parts."""
    return [p for p in re.split("[" + re.escape(chars) + "]", text) if p]


def java_split(text: str, sep: str) -> list[str]:
    """String.split(sep) for a plain separator: trailing empty parts dropped."""
    if sep not in text:
        return [text]
    parts = text.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def retry_topic(group: str | None) -> str | None:
    return None if group is None else RETRY_PREFIX + group


def check_resource_perms(resources: list[str] | None) -> None:
    """Permission.checkResourcePerms: every entry ``Res=Perm`` with a known perm."""
    for resource in resources or []:
        items = commons_split(resource, "=")
        if len(items) != 2:
            raise AclError(
                f"Parse Resource format error for {resource}.\n"
                "The expected resource format is 'Res=Perm'. For example: topicA=SUB"
            )
        perm = items[1].strip()
        if perm != "DENY" and parse_perm(perm) == DENY:
            raise AclError(
                f"Parse resource permission error for {resource}.\n"
                "The expected permissions are 'SUB' or 'PUB' or 'SUB|PUB' or 'PUB|SUB'."
            )


# ---------------------------------------------------------------------------
# Remote address patterns (RemoteAddressStrategyFactory)
# ---------------------------------------------------------------------------

AddressMatcher = Callable[[str | None], bool]


def is_ipv4(text: str | None) -> bool:
    if not text:
        return False
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


def is_ipv6(text: str | None) -> bool:
    if not text or "%" in text:
        return False
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def expand_ip(address: str, part: int) -> str:
    """AclUtils.expandIP: upper case, ``::`` widened to ``part`` groups, each group 4 digits."""
    address = address.upper()
    pad = part - address.count(":")
    if pad > 0:
        address = address.replace("::", ":" * (pad + 1))
    return ":".join(g.rjust(4, "0") for g in address.split(":"))


def _scope_error(address: str) -> AclError:
    return AclError(f"Netaddress examine scope Exception netaddress is {address}")


def _java_int(text: str, base: int = 10) -> int:
    text = text.strip() if base == 16 else text
    if not re.fullmatch(r"[+-]?[0-9a-fA-F]+" if base == 16 else r"[+-]?[0-9]+", text):
        raise AclError(f'For input string: "{text}"')
    return int(text, base)


def _ipv4_scope_ok(address: str, count: int) -> bool:
    parts = commons_split(address, ".")
    if len(parts) != 4:
        return False
    try:
        return all(0 <= int(parts[i].strip()) <= 255 for i in range(count))
    except ValueError as exc:
        raise AclError(str(exc)) from None


def _ipv6_scope_ok(address: str, count: int) -> bool:
    parts = commons_split(expand_ip(address, 8), ":")
    for i in range(count):
        try:
            value = int(parts[i], 16)
        except (ValueError, IndexError):
            return False
        if not 0 <= value <= 0xFFFF:
            return False
    return True


def _multiple(addresses: Iterable[str]) -> AddressMatcher:
    wanted: set[str] = set()
    for a in addresses:
        if is_ipv4(a):
            wanted.add(a)
        elif is_ipv6(a):
            wanted.add(expand_ip(a, 8))
        else:
            raise AclError(f"Netaddress examine Exception netaddress is {a}")

    def match(ip: str | None) -> bool:
        if ip is None:
            return False
        return (expand_ip(ip, 8) if is_ipv6(ip) else ip) in wanted

    return match


def _one(address: str) -> AddressMatcher:
    if not (is_ipv4(address) or is_ipv6(address)):
        raise AclError(f"Netaddress examine Exception netaddress is {address}")
    want = expand_ip(address, 8).upper()

    def match(ip: str | None) -> bool:
        return ip is not None and expand_ip(ip, 8).upper() == want

    return match


def _range_bounds(value: str, base: int, top: int) -> tuple[int, int] | None:
    value = value.strip()
    if value == "*":
        return 0, top
    if "-" in value:
        if value.startswith("-"):
            raise AclError(f"RangeRemoteAddressStrategy netaddress examine scope Exception value {value} ")
        pieces = commons_split(value, "-")
        start, end = _java_int(pieces[0], base), _java_int(pieces[1] if len(pieces) > 1 else "", base)
        if not (0 <= start <= top and 0 <= end <= top and start <= end):
            raise AclError(
                f"RangeRemoteAddressStrategy netaddress examine scope Exception start is {start} , end is {end}"
            )
        return start, end
    return None


def _range(pattern: str) -> AddressMatcher:
    """RangeRemoteAddressStrategy: one ``*`` or ``a-b`` part (the first found) bounds that part."""
    head: str | None = None
    index = 0
    start = end = 0
    if ":" in pattern:
        star, minus = pattern.find("*"), pattern.find("-")
        if star > -1 and star != len(pattern) - 1:
            raise _scope_error(pattern)
        if minus > -1:
            limit = pattern.rfind(":") if star == -1 else pattern.rfind(":", 0, pattern.rfind(":"))
            if minus <= limit:
                raise _scope_error(pattern)
        parts = commons_split(pattern, ":")
        for i in range(1, len(parts)):
            bounds = _range_bounds(parts[i], 16, 0xFFFF)
            index = i
            if bounds is not None:
                start, end = bounds
            if end > 0:
                if not _ipv6_scope_ok(pattern, index - 1):
                    raise _scope_error(pattern)
                if star > -1 and minus > -1:
                    sub, n = pattern[: pattern[: pattern.rfind(":")].rfind(":")], 6
                elif star == -1 and minus == -1:
                    sub, n = pattern, 8
                else:
                    sub, n = pattern[: pattern.rfind(":")], 7
                head = expand_ip(sub, n)
                index = len(commons_split(head, ":"))
                break
        v6_head, v6_index, v6_start, v6_end = head, index, start, end

        def match6(ip: str | None) -> bool:
            if v6_head is None or not is_ipv6(ip):
                return False
            full = expand_ip(ip or "", 8).upper()
            if not full.startswith(v6_head):
                return False
            value = int(full[5 * v6_index : 5 * v6_index + 4], 16)
            return v6_start <= value <= v6_end

        return match6
    parts = commons_split(pattern, ".")
    for i in (1, 2, 3):
        if i >= len(parts):
            raise _scope_error(pattern)
        bounds = _range_bounds(parts[i], 10, 255)
        index = i
        if bounds is not None:
            start, end = bounds
        if end > 0:
            if not _ipv4_scope_ok(pattern, index - 1):
                raise _scope_error(pattern)
            head = "".join(p.strip() + "." for p in parts[:index])
            break
    v4_head, v4_index, v4_start, v4_end = head, index, start, end

    def match4(ip: str | None) -> bool:
        if v4_head is None or ip is None or not is_ipv4(ip) or not ip.startswith(v4_head):
            return False
        if v4_index == 3:
            value = ip[len(v4_head) :]
        elif v4_index == 2:
            value = ip[len(v4_head) : ip.rfind(".")]
        else:
            value = ip[len(v4_head) : ip.rfind(".", 0, ip.rfind("."))]
        try:
            return v4_start <= int(value) <= v4_end
        except ValueError:
            return False

    return match4


def address_matcher(pattern: str | None) -> AddressMatcher:
    """RemoteAddressStrategyFactory.getRemoteAddressStrategy; raises AclError on a bad pattern."""
    if pattern is None or not pattern.strip():
        return lambda ip: False
    if pattern in ("*", "*.*.*.*", "*:*:*:*:*:*:*:*"):
        return lambda ip: True
    if pattern.endswith("}"):
        if ":" in pattern:
            last = commons_split(pattern, ":")[-1]
            if not last.startswith("{"):
                raise AclError("MultipleRemoteAddressStrategy netaddress examine scope Exception netaddress")
        else:
            parts = commons_split(pattern, ".")
            if len(parts) < 4:
                raise AclError("MultipleRemoteAddressStrategy has got a/some wrong format IP(s) ")
            last = parts[-1]
            if not last.startswith("{"):
                raise AclError("MultipleRemoteAddressStrategy netaddress examine scope Exception netaddress")
        prefix = pattern[: pattern.index("{")]
        return _multiple(prefix + p for p in commons_split(last[1:-1], ","))
    if "," in pattern:
        return _multiple(commons_split(pattern, ","))
    if "*" in pattern or "-" in pattern:
        return _range(pattern)
    return _one(pattern)


# ---------------------------------------------------------------------------
# Accounts and requests
# ---------------------------------------------------------------------------


@dataclasses.dataclass
class PlainAccessConfig:
    """One account as the admin codes and the YAML give it (PlainAccessConfig)."""

    access_key: str | None = None
    secret_key: str | None = None
    white_remote_address: str | None = None
    admin: bool = False
    default_topic_perm: str | None = None
    default_group_perm: str | None = None
    topic_perms: list[str] | None = None
    group_perms: list[str] | None = None

    @classmethod
    def from_yaml(cls, entry: Mapping[str, Any]) -> PlainAccessConfig:
        def text(key: str) -> str | None:
            v = entry.get(key)
            if v is None:
                return None
            if isinstance(v, bool):
                return "true" if v else "false"
            return str(v)

        def texts(key: str) -> list[str] | None:
            v = entry.get(key)
            if v is None:
                return None
            if not isinstance(v, list):
                v = [v]
            return [str(x) for x in v]

        admin = entry.get("admin")
        return cls(
            access_key=text("accessKey"),
            secret_key=text("secretKey"),
            white_remote_address=text("whiteRemoteAddress"),
            admin=admin is True or (isinstance(admin, str) and admin.strip().lower() == "true"),
            default_topic_perm=text("defaultTopicPerm"),
            default_group_perm=text("defaultGroupPerm"),
            topic_perms=texts("topicPerms"),
            group_perms=texts("groupPerms"),
        )

    def to_java_json(self) -> dict[str, Any]:
        """fastjson's view (bean properties sorted by name, nulls left out)."""
        doc = {
            "accessKey": self.access_key,
            "admin": self.admin,
            "defaultGroupPerm": self.default_group_perm,
            "defaultTopicPerm": self.default_topic_perm,
            "groupPerms": self.group_perms,
            "secretKey": self.secret_key,
            "topicPerms": self.topic_perms,
            "whiteRemoteAddress": self.white_remote_address,
        }
        return {k: v for k, v in doc.items() if v is not None}


def check_account(cfg: PlainAccessConfig) -> None:
    """PlainPermissionManager.checkPlainAccessConfig."""
    ak, sk = cfg.access_key, cfg.secret_key
    if ak is None or sk is None or len(ak) <= 6 or len(sk) <= 6:
        raise AclError(
            f"The accessKey={_jstr(ak)} and secretKey={_jstr(sk)} cannot be null and length should longer than 6"
        )


def _jstr(v: Any) -> str:
    return "null" if v is None else str(v)


@dataclasses.dataclass
class OwnedAccess:
    """An account's rights (the PlainAccessResource built from its config)."""

    access_key: str
    secret_key: str
    white_remote_address: str | None
    admin: bool
    default_topic_perm: int
    default_group_perm: int
    resource_perms: dict[str, int] | None
    matcher: AddressMatcher

    @classmethod
    def build(cls, cfg: PlainAccessConfig) -> OwnedAccess:
        check_account(cfg)
        perms: dict[str, int] | None = None
        for is_topic, entries in ((False, cfg.group_perms), (True, cfg.topic_perms)):
            for resource in entries or []:
                items = commons_split(resource, "=")
                if len(items) != 2:
                    kind = "topic" if is_topic else "group"
                    raise AclError(f"Parse resource permission failed for {kind}:{resource}")
                name = items[0].strip()
                perms = perms if perms is not None else {}
                perms[name if is_topic else RETRY_PREFIX + name] = parse_perm(items[1].strip())
        return cls(
            access_key=cfg.access_key or "",
            secret_key=cfg.secret_key or "",
            white_remote_address=cfg.white_remote_address,
            admin=cfg.admin,
            default_topic_perm=parse_perm(cfg.default_topic_perm),
            default_group_perm=parse_perm(cfg.default_group_perm),
            resource_perms=perms,
            matcher=address_matcher(cfg.white_remote_address),
        )


@dataclasses.dataclass
class AccessRequest:
    """What one request asks for (the PlainAccessResource PlainAccessValidator.parse builds)."""

    request_code: int
    remote_ip: str | None
    access_key: str | None = None
    signature: str | None = None
    secret_token: str | None = None
    resources: dict[str, int] | None = None
    content: bytes | None = None

    def need(self, resource: str | None, perm: int) -> None:
        if resource is None:
            return
        if self.resources is None:
            self.resources = {}
        self.resources[resource] = perm


def _is_retry(topic: str | None) -> bool:
    return topic is not None and topic.startswith(RETRY_PREFIX)


def parse_request(
    code: int, ext_fields: Mapping[str, str] | None, body: bytes | None, remote_addr: str | None
) -> AccessRequest:
    """PlainAccessValidator.parse: the resources a request needs and the content it signed."""
    ip = remote_addr[: remote_addr.rfind(":")] if remote_addr and ":" in remote_addr else remote_addr
    req = AccessRequest(request_code=code, remote_ip=ip)
    if ext_fields is None:
        return req
    ext = ext_fields
    req.access_key = ext.get(ACCESS_KEY)
    req.signature = ext.get(SIGNATURE)
    req.secret_token = ext.get(SECURITY_TOKEN)
    try:
        if code == R.SEND_MESSAGE:
            topic = ext.get("topic")
            if _is_retry(topic):
                req.need(retry_topic(ext.get("group")), SUB)
            else:
                req.need(topic, PUB)
        elif code == R.SEND_MESSAGE_V2:
            topic = ext.get("b")
            if _is_retry(topic):
                req.need(retry_topic(ext.get("a")), SUB)
            else:
                req.need(topic, PUB)
        elif code == R.CONSUMER_SEND_MSG_BACK:
            req.need(retry_topic(ext.get("group")), SUB)
        elif code == R.PULL_MESSAGE:
            req.need(ext.get("topic"), SUB)
            req.need(retry_topic(ext.get("consumerGroup")), SUB)
        elif code == R.QUERY_MESSAGE:
            req.need(ext.get("topic"), SUB)
        elif code == R.HEART_BEAT:
            _heartbeat_resources(req, body)
        elif code in (R.UNREGISTER_CLIENT, R.GET_CONSUMER_LIST_BY_GROUP):
            req.need(retry_topic(ext.get("consumerGroup")), SUB)
        elif code == R.UPDATE_CONSUMER_OFFSET:
            req.need(retry_topic(ext.get("consumerGroup")), SUB)
            req.need(ext.get("topic"), SUB)
    except AclError:
        raise
    except Exception as exc:
        message = str(exc) if exc.args and exc.args[0] is not None else None
        raise AclError(message, WHERE_PARSE) from exc
    req.content = signing_content(ext, body, skip=(SIGNATURE, UNIQUE_MSG_QUERY_FLAG))
    return req


def _heartbeat_resources(req: AccessRequest, body: bytes | None) -> None:
    from ..codecs import fastjson

    if not body:
        raise ValueError(None)  # Java: a NullPointerException decoding the absent body
    doc = fastjson.loads(body)
    if not isinstance(doc, dict):
        raise ValueError("can not cast to HeartbeatData")
    for data in doc.get("consumerDataSet") or []:
        req.need(retry_topic(data.get("groupName")), SUB)
        for sub in data.get("subscriptionDataSet") or []:
            req.need(sub.get("topic"), SUB)


def check_perm(needed: AccessRequest, owned: OwnedAccess) -> None:
    """PlainPermissionManager.checkPerm."""
    if needed.request_code in ADMIN_CODES and not owned.admin:
        raise AclError(
            f"Need admin permission for request code={needed.request_code}, but accessKey={owned.access_key} is not",
            WHERE_ADMIN,
        )
    wanted = needed.resources
    if wanted is None:
        return
    have = owned.resource_perms
    if have is None and owned.admin:
        return
    for resource in hashmap_order(list(wanted)):
        perm = wanted[resource]
        is_group = _is_retry(resource)
        shown = f"group:{resource[len(RETRY_PREFIX) :]}" if is_group else f"topic:{resource}"
        if have is None or resource not in have:
            default = owned.default_group_perm if is_group else owned.default_topic_perm
            if not check_permission(perm, default):
                raise AclError(f"No default permission for {shown}", WHERE_DEFAULT_PERM)
            continue
        if not check_permission(perm, have[resource]):
            raise AclError(f"No default permission for {shown}", WHERE_PERM)


# ---------------------------------------------------------------------------
# The manager: files, validation, updates
# ---------------------------------------------------------------------------


def _data_version_of(doc: Mapping[str, Any] | None) -> dict[str, int]:
    versions = (doc or {}).get("dataVersion")
    if isinstance(versions, list) and versions and isinstance(versions[0], Mapping):
        first = versions[0]
        try:
            return {"counter": int(first.get("counter") or 0), "timestamp": int(first.get("timestamp") or 0)}
        except (TypeError, ValueError):
            pass
    return {"counter": 0, "timestamp": int(time.time() * 1000)}


class PlainPermissionManager:
    """The accounts of every ACL file and the checks of one request."""

    def __init__(self, home: str | None, plain_file: str = DEFAULT_PLAIN_FILE, *, create: bool = True) -> None:
        self.home = home or ""
        # without a home only an absolute plain file can be read (never a directory relative to the cwd)
        self.acl_dir = os.path.normpath(os.path.join(self.home, ACL_DIR)) if self.home else ""
        self.default_file = os.path.normpath(os.path.join(self.home, plain_file))
        self.readable = bool(self.home) or os.path.isabs(self.default_file)
        self.files: list[str] = []
        self.accounts: dict[str, dict[str, OwnedAccess]] = {}  # file -> access key -> rights
        self.key_file: dict[str, str] = {}  # access key -> file
        self.global_white: list[AddressMatcher] = []
        self.data_versions: dict[str, dict[str, int]] = {}
        self.data_version: dict[str, int] = {"counter": 0, "timestamp": int(time.time() * 1000)}
        self._stamp: dict[str, tuple[float, int]] = {}
        self._next_check = 0.0
        self.create = create
        self.load()

    # -- loading -------------------------------------------------------------------------
    def _list_files(self) -> list[str]:
        found: list[str] = []
        if self.acl_dir and os.path.isdir(self.acl_dir):
            tools = os.path.normpath(os.path.join(self.home, "conf/tools.yml"))
            for root, dirs, names in os.walk(self.acl_dir):
                dirs.sort()
                for name in sorted(names):
                    full = os.path.join(root, name)
                    if full != tools and name.endswith((".yml", ".yaml")):
                        found.append(os.path.normpath(full))
        if os.path.exists(self.default_file) and self.default_file not in found:
            found.append(self.default_file)
        return found

    @staticmethod
    def read(path: str) -> dict[str, Any] | None:
        try:
            with open(path, encoding="utf-8") as f:
                # PyYAML's safe loader resolves scalars as YAML 1.1, like SnakeYAML: `y` stays a string
                doc = yaml.safe_load(f)
        except FileNotFoundError:
            return None
        except (OSError, yaml.YAMLError) as exc:
            raise AclError(str(exc)) from exc
        return doc if isinstance(doc, dict) else None

    def load(self) -> None:
        """Read every ACL file anew (PlainPermissionManager.load); raises AclError on a bad file."""
        if not self.readable:
            log.warning("ACL enabled but no rocketmqHome: every request without a white address is refused")
            return
        if self.create and not os.path.exists(self.default_file) and os.path.isdir(os.path.dirname(self.default_file)):
            open(self.default_file, "a").close()
        accounts: dict[str, dict[str, OwnedAccess]] = {}
        key_file: dict[str, str] = {}
        white: list[AddressMatcher] = []
        versions: dict[str, dict[str, int]] = {}
        files = self._list_files()
        for path in files:
            doc = self.read(path)
            if not doc:
                log.warning("No data in file %s", path)
                continue
            for addr in doc.get("globalWhiteRemoteAddresses") or []:
                white.append(address_matcher(None if addr is None else str(addr)))
            table: dict[str, OwnedAccess] = {}
            for entry in doc.get("accounts") or []:
                if not isinstance(entry, Mapping):
                    continue
                owned = OwnedAccess.build(PlainAccessConfig.from_yaml(entry))
                if owned.access_key in key_file:
                    log.warning("The accessKey %s is repeated in multiple ACL files", owned.access_key)
                    continue
                table[owned.access_key] = owned
                key_file[owned.access_key] = path
            if table:
                accounts[path] = table
            versions[path] = _data_version_of(doc)
        if self.default_file in versions:
            self.data_version = dict(versions[self.default_file])
        self.files = files
        self.accounts, self.key_file, self.global_white, self.data_versions = accounts, key_file, white, versions
        self._stamp = self._stamps()

    def _stamps(self) -> dict[str, tuple[float, int]]:
        out = {}
        for path in self._list_files():
            try:
                st = os.stat(path)
            except OSError:
                continue
            out[path] = (st.st_mtime, st.st_size)
        return out

    def reload_if_changed(self, now: float | None = None) -> bool:
        """Reload when an ACL file changed, appeared or went (checked every few seconds)."""
        now = time.monotonic() if now is None else now
        if now < self._next_check:
            return False
        self._next_check = now + WATCH_INTERVAL_S
        if not self.readable or self._stamps() == self._stamp:
            return False
        try:
            self.load()
        except AclError as exc:
            log.error("reloading the ACL files failed, keeping the previous accounts: %s", exc.message)
            self._stamp = self._stamps()
            return False
        log.info("ACL files reloaded: %s", ", ".join(self.files))
        return True

    # -- validation ----------------------------------------------------------------------
    def validate(self, req: AccessRequest) -> None:
        """PlainPermissionManager.validate; raises AclError."""
        for matcher in self.global_white:
            if matcher(req.remote_ip):
                return
        if req.access_key is None:
            raise AclError("No accessKey is configured", WHERE_NO_KEY)
        path = self.key_file.get(req.access_key)
        if path is None:
            raise AclError(f"No acl config for {req.access_key}", WHERE_NO_CONFIG)
        owned = self.accounts.get(path, {}).get(req.access_key)
        if owned is None:
            raise AclError(f"No PlainAccessResource for accessKey={req.access_key}", WHERE_NO_RESOURCE)
        if owned.matcher(req.remote_ip):
            return
        expected = signature_of(req.content or b"", owned.secret_key)
        if req.signature is None or not hmac.compare_digest(expected, req.signature):
            raise AclError(f"Check signature failed for accessKey={req.access_key}", WHERE_SIGNATURE)
        if req.resources is not None and req.resources.get(TRACE_TOPIC) == PUB:
            return
        check_perm(req, owned)

    # -- updates (the ACL admin codes) -------------------------------------------------------
    def _write(self, path: str, doc: dict[str, Any]) -> None:
        version = _data_version_of(doc) if isinstance(doc.get("dataVersion"), list) and doc["dataVersion"] else None
        counter = version["counter"] if version else 0
        doc["dataVersion"] = [{"counter": counter + 1, "timestamp": int(time.time() * 1000)}]
        self.data_versions[path] = dict(doc["dataVersion"][0])
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            yaml.safe_dump(doc, f, default_flow_style=False, sort_keys=False, allow_unicode=True)
        os.replace(tmp, path)
        try:
            self.load()
        except AclError as exc:
            log.error("reloading %s after an update failed: %s", path, exc.message)

    @staticmethod
    def _account_map(existing: dict[str, Any] | None, cfg: PlainAccessConfig) -> dict[str, Any]:
        """createAclAccessConfigMap: the YAML entry of an account, keeping what it had."""
        entry = existing if existing is not None else {}
        if not cfg.access_key or len(cfg.access_key) <= 6:
            raise AclError(f"The accessKey={_jstr(cfg.access_key)} cannot be null and length should longer than 6")
        entry["accessKey"] = cfg.access_key
        if cfg.secret_key:
            if len(cfg.secret_key) <= 6:
                raise AclError(f"The secretKey={cfg.secret_key} value length should longer than 6")
            entry["secretKey"] = cfg.secret_key
        if cfg.white_remote_address is not None:
            entry["whiteRemoteAddress"] = cfg.white_remote_address
        entry["admin"] = cfg.admin
        if cfg.default_topic_perm:
            entry["defaultTopicPerm"] = cfg.default_topic_perm
        if cfg.default_group_perm:
            entry["defaultGroupPerm"] = cfg.default_group_perm
        if cfg.topic_perms is not None:
            entry["topicPerms"] = list(cfg.topic_perms)
        if cfg.group_perms is not None:
            entry["groupPerms"] = list(cfg.group_perms)
        return entry

    def update_access_config(self, cfg: PlainAccessConfig) -> bool:
        """UPDATE_AND_CREATE_ACL_CONFIG: change an account where it is defined, else add it
        to the default file; raises AclError for a bad account."""
        check_account(cfg)
        check_resource_perms(cfg.topic_perms)
        check_resource_perms(cfg.group_perms)
        OwnedAccess.build(cfg)  # its white address must parse too
        path = self.key_file.get(cfg.access_key or "")
        if path is not None:
            doc = self.read(path) or {}
            accounts = doc.get("accounts")
            if isinstance(accounts, list):
                for i, entry in enumerate(accounts):
                    if isinstance(entry, dict) and str(entry.get("accessKey")) == cfg.access_key:
                        del accounts[i]
                        accounts.append(self._account_map(entry, cfg))
                        break
            else:
                doc["accounts"] = [self._account_map(None, cfg)]
            self._write(path, doc)
            return True
        if not os.path.exists(self.default_file):
            os.makedirs(os.path.dirname(self.default_file), exist_ok=True)
            open(self.default_file, "a").close()
        doc = self.read(self.default_file) or {"accounts": []}
        accounts = doc.get("accounts")
        if not isinstance(accounts, list):
            accounts = doc["accounts"] = []
        accounts.append(self._account_map(None, cfg))
        self._write(self.default_file, doc)
        return True

    def delete_access_config(self, access_key: str | None) -> bool:
        """DELETE_ACL_CONFIG: remove an account from its file."""
        if not access_key:
            return False
        path = self.key_file.get(access_key)
        if path is None:
            return False
        doc = self.read(path)
        if not doc:
            return True
        accounts = doc.get("accounts")
        for i, entry in enumerate(accounts if isinstance(accounts, list) else []):
            if isinstance(entry, dict) and str(entry.get("accessKey")) == access_key:
                del accounts[i]  # type: ignore[union-attr]
                self.key_file.pop(access_key, None)
                self._write(path, doc)
                return True
        return False

    def update_global_white_addrs(self, addresses: list[str] | None, path: str | None = None) -> bool:
        """UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: replace the global white list of an ACL file."""
        path = path or self.default_file
        if addresses is None:
            return False
        if not os.path.isfile(path):
            log.error("Parameter value %s is not exist or is a directory, please check your parameter", path)
            return False
        if not path.startswith(self.home):
            log.error("Parameter value %s is not in the directory rocketmq.home.dir %s", path, self.home)
            return False
        if path.endswith(".yaml") and not path.endswith(".yml"):
            log.error("Parameter value %s is not a ACL configuration file", path)
            return False
        doc = self.read(path) or {}
        doc["globalWhiteRemoteAddresses"] = list(addresses)
        self._write(path, doc)
        return True

    def version_json(self) -> str:
        """The deprecated single version (the default file's DataVersion as JSON)."""
        v = self.data_version
        return json.dumps({"counter": v["counter"], "timestamp": v["timestamp"]}, separators=(",", ":"))

    def all_versions_json(self) -> str:
        """JSON of file -> DataVersion (GET_BROKER_CLUSTER_ACL_INFO's allAclFileVersion)."""
        order = hashmap_order(list(self.data_versions))
        doc = {
            p: {"counter": self.data_versions[p]["counter"], "timestamp": self.data_versions[p]["timestamp"]}
            for p in order
        }
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


class PlainAccessValidator:
    """The broker's hook: parse a request, validate it, raise AclError when refused."""

    def __init__(self, manager: PlainPermissionManager) -> None:
        self.manager = manager

    @classmethod
    def for_home(cls, home: str | None, plain_file: str | None = None) -> PlainAccessValidator:
        """The validator of a broker; FileNotFoundError (the broker refuses to start) when ``plain_file`` is
        named but cannot be found: serving with no accounts would refuse every request."""
        if plain_file:  # checked before the manager would create it empty
            path = os.path.normpath(os.path.join(home or "", plain_file))
            if not os.path.isfile(path):
                where = "" if os.path.isabs(plain_file) else f" (relative to rocketmqHome={home or '<unset>'})"
                raise FileNotFoundError(f"aclPlainFile {path} does not exist{where}")
        return cls(PlainPermissionManager(home, plain_file or DEFAULT_PLAIN_FILE))

    def check(self, code: int, ext_fields: Mapping[str, str] | None, body: bytes | None, remote_addr: str) -> None:
        self.manager.reload_if_changed()
        self.manager.validate(parse_request(code, ext_fields, body, remote_addr))

    def __call__(self, ctx: Any, request: Any) -> None:
        """Dispatcher before-hook form: ``(ctx, request)``."""
        self.check(request.code, request.ext_fields, request.body, str(ctx.remote_addr))
