"""ACL accounts and requests (Java's PlainAccessConfig and PlainAccessResource) and checkPerm."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from ...javacompat.hashmap import hashmap_order
from .address import AddressMatcher, address_matcher
from .permission import (
    ADMIN_CODES,
    RETRY_PREFIX,
    WHERE_ADMIN,
    WHERE_DEFAULT_PERM,
    WHERE_PERM,
    AclError,
    check_permission,
    commons_split,
    is_retry,
    parse_perm,
)


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
            f"The accessKey={jstr(ak)} and secretKey={jstr(sk)} cannot be null and length should longer than 6"
        )


def jstr(v: Any) -> str:
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


def check_admin(needed: AccessRequest, owned: OwnedAccess, admin_codes: AbstractSet[int] = ADMIN_CODES) -> None:
    """checkPerm's first test: the codes of ``admin_codes`` need ``admin: true``."""
    if needed.request_code in admin_codes and not owned.admin:
        raise AclError(
            f"Need admin permission for request code={needed.request_code}, but accessKey={owned.access_key} is not",
            WHERE_ADMIN,
        )


def check_perm(needed: AccessRequest, owned: OwnedAccess, admin_codes: AbstractSet[int] = ADMIN_CODES) -> None:
    """PlainPermissionManager.checkPerm (``admin_codes``: Java's Permission.ADMIN_CODE, or more)."""
    check_admin(needed, owned, admin_codes)
    wanted = needed.resources
    if wanted is None:
        return
    have = owned.resource_perms
    if have is None and owned.admin:
        return
    for resource in hashmap_order(list(wanted)):
        perm = wanted[resource]
        is_group = is_retry(resource)
        shown = f"group:{resource[len(RETRY_PREFIX) :]}" if is_group else f"topic:{resource}"
        if have is None or resource not in have:
            default = owned.default_group_perm if is_group else owned.default_topic_perm
            if not check_permission(perm, default):
                raise AclError(f"No default permission for {shown}", WHERE_DEFAULT_PERM)
            continue
        if not check_permission(perm, have[resource]):
            raise AclError(f"No default permission for {shown}", WHERE_PERM)
