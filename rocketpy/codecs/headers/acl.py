"""Headers of the ACL administration commands."""

from __future__ import annotations

from .base import CommandHeader, jfield


class CreateAccessConfigRequestHeader(CommandHeader):
    """UPDATE_AND_CREATE_ACL_CONFIG request: one account's access settings."""

    java_class = "org.apache.rocketmq.common.protocol.header.CreateAccessConfigRequestHeader"

    access_key: str | None = jfield("String", required=True)
    secret_key: str | None = jfield("String")
    white_remote_address: str | None = jfield("String")
    admin: bool = jfield("boolean")
    default_topic_perm: str | None = jfield("String")
    default_group_perm: str | None = jfield("String")
    topic_perms: str | None = jfield("String")
    group_perms: str | None = jfield("String")


class DeleteAccessConfigRequestHeader(CommandHeader):
    """DELETE_ACL_CONFIG request: the account to remove."""

    java_class = "org.apache.rocketmq.common.protocol.header.DeleteAccessConfigRequestHeader"

    access_key: str | None = jfield("String", required=True)


class UpdateGlobalWhiteAddrsConfigRequestHeader(CommandHeader):
    """UPDATE_GLOBAL_WHITE_ADDRS_CONFIG request: the global white list."""

    java_class = "org.apache.rocketmq.common.protocol.header.UpdateGlobalWhiteAddrsConfigRequestHeader"

    global_white_addrs: str | None = jfield("String", required=True)
    acl_file_full_path: str | None = jfield("String", required=True)


class GetBrokerAclConfigResponseHeader(CommandHeader):
    """GET_BROKER_CLUSTER_ACL_INFO response: the broker's ACL versions and identity."""

    java_class = "org.apache.rocketmq.common.protocol.header.GetBrokerAclConfigResponseHeader"

    version: str | None = jfield("String", required=True)
    all_acl_file_version: str | None = jfield("String")
    broker_name: str | None = jfield("String", required=True)
    broker_addr: str | None = jfield("String", required=True)
    cluster_name: str | None = jfield("String", required=True)
