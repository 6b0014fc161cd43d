"""The ACL administration codes of AdminBrokerProcessor: UPDATE_AND_CREATE_ACL_CONFIG,
DELETE_ACL_CONFIG, UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, GET_BROKER_CLUSTER_ACL_INFO.

Who may call them is the ACL hook's business (these codes need no admin flag in
4.9.8, only a valid signature). With ``aclEnable=false`` Java has no validator: the
update codes fail with a null remark and GET_BROKER_CLUSTER_ACL_INFO is never answered.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import trio

from ...codecs import RemotingCommand, ResponseCode
from ...codecs.headers import (
    CreateAccessConfigRequestHeader,
    DeleteAccessConfigRequestHeader,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
)
from ...remoting import java_decode_header
from ..acl import AclError, PlainAccessConfig, java_split
from ..responses import error, respond

if TYPE_CHECKING:
    from ..context import BrokerContext

log = logging.getLogger("rocketpy.broker")


def _manager(ctx: BrokerContext) -> Any:
    broker = ctx.state
    return broker.acl.manager if broker.acl is not None else None


def _split(text: str | None) -> list[str] | None:
    return None if text is None else java_split(text, ",")


async def update_and_create_acl_config(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    h = java_decode_header(request, CreateAccessConfigRequestHeader)
    cfg = PlainAccessConfig(
        access_key=h.access_key,
        secret_key=h.secret_key,
        white_remote_address=h.white_remote_address,
        admin=bool(h.admin),
        default_topic_perm=h.default_topic_perm,
        default_group_perm=h.default_group_perm,
        topic_perms=_split(h.topic_perms),
        group_perms=_split(h.group_perms),
    )
    code = ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED
    manager = _manager(ctx)
    if manager is None:
        return respond(request, code)  # Java: NullPointerException, remark null
    try:
        ok = await trio.to_thread.run_sync(manager.update_access_config, cfg)
    except AclError as exc:
        return error(request, code, exc.message or "")
    except OSError as exc:
        return error(request, code, str(exc))
    if not ok:
        return error(
            request, code, f"The accesskey[{h.access_key}] corresponding to accessConfig has been updated failed."
        )
    return respond(request)


async def delete_acl_config(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    h = java_decode_header(request, DeleteAccessConfigRequestHeader)
    log.info("DeleteAccessConfig called by %s", ctx.remote_addr)
    code = ResponseCode.DELETE_ACL_CONFIG_FAILED
    manager = _manager(ctx)
    if manager is None:
        return respond(request, code)
    try:
        ok = await trio.to_thread.run_sync(manager.delete_access_config, h.access_key)
    except (AclError, OSError) as exc:
        return error(request, code, getattr(exc, "message", None) or str(exc))
    if not ok:
        return error(
            request, code, f"The accesskey[{h.access_key}] corresponding to accessConfig has been deleted failed."
        )
    return respond(request)


async def update_global_white_addrs_config(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    h = java_decode_header(request, UpdateGlobalWhiteAddrsConfigRequestHeader)
    code = ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED
    manager = _manager(ctx)
    if manager is None:
        return respond(request, code)
    try:
        addresses = _split(h.global_white_addrs)
        ok = await trio.to_thread.run_sync(manager.update_global_white_addrs, addresses, h.acl_file_full_path)
    except (AclError, OSError) as exc:
        return error(request, code, getattr(exc, "message", None) or str(exc))
    if not ok:
        return error(request, code, f"The globalWhiteAddresses[{h.global_white_addrs}] has been updated failed.")
    return respond(request)


async def get_broker_cluster_acl_info(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand | None:
    broker = ctx.state
    manager = _manager(ctx)
    if manager is None:
        log.error("Failed to generate a proper getBrokerAclConfigVersion response: ACL is not enabled")
        return None
    await trio.to_thread.run_sync(manager.reload_if_changed)
    header = {
        "allAclFileVersion": manager.all_versions_json(),
        "version": manager.version_json(),
        "brokerAddr": broker.broker_addr,
        "brokerName": broker.config.broker_name,
        "clusterName": broker.config.broker_cluster_name,
    }
    return respond(request, header=header)
