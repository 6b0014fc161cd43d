"""ACL errors and permissions: Java's AclException, Permission's bits and parsing, resource names."""

from __future__ import annotations

import re

from ...codecs.codes import RequestCode as R

UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"
RETRY_PREFIX = "%RETRY%"
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"

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


def retry_topic(group: str | None) -> str | None:
    return None if group is None else RETRY_PREFIX + group


def is_retry(topic: str | None) -> bool:
    return topic is not None and topic.startswith(RETRY_PREFIX)


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
