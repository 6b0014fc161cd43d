"""The broker's ACL hook (PlainAccessValidator): what a request needs, then the manager's verdict."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from ...codecs import RemotingCommand
from ...codecs.acl_signature import ACCESS_KEY, SECURITY_TOKEN, SIGNATURE, signing_content
from ...codecs.codes import RequestCode as R
from ...remoting.dispatch import RequestContext
from .accounts import AccessRequest
from .manager import DEFAULT_PLAIN_FILE, WATCH_INTERVAL_S, PlainPermissionManager
from .permission import PUB, SUB, UNIQUE_MSG_QUERY_FLAG, WHERE_PARSE, AclError, is_retry, retry_topic
from .strict import READ_CODES, STRICT, AclStrictness

#: the topic of the message stored at a CommitLog offset, or None (VIEW_MESSAGE_BY_ID under aclStrictReads)
TopicAt = Callable[[int], "str | None"]


def parse_request(
    code: int,
    ext_fields: Mapping[str, str] | None,
    body: bytes | None,
    remote_addr: str | None,
    strict: AclStrictness = STRICT,
    topic_at: TopicAt | None = None,
) -> AccessRequest:
    """PlainAccessValidator.parse: the resources a request needs and the content it signed; ``strict`` adds
    those Java leaves out (:mod:`.strict`), ``topic_at`` finds a message's topic for VIEW_MESSAGE_BY_ID."""
    ip = remote_addr[: remote_addr.rfind(":")] if remote_addr and ":" in remote_addr else remote_addr
    req = AccessRequest(request_code=code, remote_ip=ip)
    if ext_fields is None:
        return req
    ext = ext_fields
    req.access_key = ext.get(ACCESS_KEY)
    req.signature = ext.get(SIGNATURE)
    req.secret_token = ext.get(SECURITY_TOKEN)
    try:
        if code in (R.SEND_MESSAGE, R.SEND_MESSAGE_V2):
            v2 = code == R.SEND_MESSAGE_V2  # V2 names its header fields with single letters
            topic = ext.get("b" if v2 else "topic")
            if is_retry(topic):
                req.need(retry_topic(ext.get("a" if v2 else "group")), SUB)
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
        # -- stricter than Java (each off by its switch) --
        elif code == R.SEND_BATCH_MESSAGE and strict.batch_send:
            # a batch is one send to the header's topic (SendMessageRequestHeaderV2); its messages carry none
            topic = ext.get("b")
            if is_retry(topic):
                req.need(retry_topic(ext.get("a")), SUB)
            else:
                req.need(topic, PUB)
        elif code in READ_CODES and strict.reads:
            req.need(ext.get("topic"), SUB)
        elif code == R.VIEW_MESSAGE_BY_ID and strict.reads and topic_at is not None:
            offset = ext.get("offset")
            if offset is not None:
                req.need(topic_at(int(offset)), SUB)  # nothing stored there: the handler says so
    except AclError:
        raise
    except Exception as exc:
        message = str(exc) if exc.args and exc.args[0] is not None else None
        raise AclError(message, WHERE_PARSE) from exc
    req.content = signing_content(ext, body, skip=(SIGNATURE, UNIQUE_MSG_QUERY_FLAG))
    return req


def _heartbeat_resources(req: AccessRequest, body: bytes | None) -> None:
    from ...codecs import fastjson

    if not body:
        raise ValueError(None)  # Java: a NullPointerException decoding the absent body
    doc = fastjson.loads(body)
    if not isinstance(doc, dict):
        raise ValueError("can not cast to HeartbeatData")
    for data in doc.get("consumerDataSet") or []:
        req.need(retry_topic(data.get("groupName")), SUB)
        for sub in data.get("subscriptionDataSet") or []:
            req.need(sub.get("topic"), SUB)


class PlainAccessValidator:
    """The broker's hook: parse a request, validate it, raise AclError when refused."""

    def __init__(self, manager: PlainPermissionManager) -> None:
        self.manager = manager
        #: the broker's store lookup for VIEW_MESSAGE_BY_ID (set by the broker; None: not checked)
        self.topic_at: TopicAt | None = None

    @property
    def strict(self) -> AclStrictness:
        return self.manager.strict

    @classmethod
    def for_home(
        cls, home: str | None, plain_file: str | None = None, strict: AclStrictness = STRICT
    ) -> PlainAccessValidator:
        """The validator of a broker; FileNotFoundError (the broker refuses to start) when ``plain_file`` is
        named but cannot be found: serving with no accounts would refuse every request."""
        if plain_file:  # checked before the manager would create it empty
            path = os.path.normpath(os.path.join(home or "", plain_file))
            if not os.path.isfile(path):
                where = "" if os.path.isabs(plain_file) else f" (relative to rocketmqHome={home or '<unset>'})"
                raise FileNotFoundError(f"aclPlainFile {path} does not exist{where}")
        return cls(PlainPermissionManager(home, plain_file or DEFAULT_PLAIN_FILE, strict=strict))

    @classmethod
    def for_broker(cls, props: Mapping[str, str], store: Any) -> PlainAccessValidator:
        """The validator of a broker with these broker.conf ``props`` (rocketmqHome, aclPlainFile, the
        switches of :mod:`.strict`) over its message ``store``."""
        validator = cls.for_home(props.get("rocketmqHome"), props.get("aclPlainFile"), AclStrictness.from_props(props))
        validator.topic_at = store_topic_lookup(store)
        return validator

    def check(self, code: int, ext_fields: Mapping[str, str] | None, body: bytes | None, remote_addr: str) -> None:
        self.manager.validate(parse_request(code, ext_fields, body, remote_addr, self.strict, self.topic_at))

    async def watch(self) -> None:
        """Reload the ACL files when they change, every WATCH_INTERVAL_S, the file reads in a worker thread
        (requests go on being checked against the accounts of the moment meanwhile)."""
        import trio  # the ACL package stays importable without trio (only the broker runs this)

        while True:
            await trio.sleep(WATCH_INTERVAL_S)
            await trio.to_thread.run_sync(self.manager.reload_changed)

    def __call__(self, ctx: RequestContext[Any], request: RemotingCommand) -> None:
        """Dispatcher before-hook form: ``(ctx, request)``."""
        self.check(request.code, request.ext_fields, request.body, str(ctx.remote_addr))


def store_topic_lookup(store: Any) -> TopicAt:
    """The topic of the record at a CommitLog offset of ``store`` (a MessageStore), None where nothing is
    stored; AclError where the bytes there are not a message (an offset inside one: Java answers whatever
    bytes it finds, parts of any topic's messages)."""
    from ...codecs.errors import CodecError
    from ...codecs.record import decode_message, parse_record_fields

    def topic_at(offset: int) -> str | None:
        if offset < 0:
            return None
        data = store.select_one_message_by_offset(offset)
        if not data:
            return None
        fields = parse_record_fields(bytes(data))
        if fields is not None:
            return bytes(fields[16]).decode("utf-8", "replace")
        try:
            return str(decode_message(data, 0, decompress=False).topic)
        except CodecError:
            raise AclError(f"No message starts at offset {offset}", WHERE_PARSE) from None

    return topic_at
