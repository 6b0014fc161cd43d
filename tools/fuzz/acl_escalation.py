"""``fuzz_servers.py --mode acl-escalation`` (issue #46): a normal ACL account, and a host outside the
NameServer's and the HA port's lists, try every escalation the issue found in Java 4.9.8; each attempt is
followed by a look at what the servers hold, through an admin account and in their files.

The servers: a NameServer whose ``registerAllowedAddresses`` and ``adminAllowedAddresses`` are 127.0.0.1,
and a broker with ``aclEnable=true``, ``haAllowedAddresses=127.0.0.1,slaves`` and four accounts in
``plain_acl.yml``: ``fuzzUser`` (normal: ``open`` PUB|SUB, ``secret`` DENY, every other topic DENY),
``whiteUser`` (normal, its ``whiteRemoteAddress`` 127.0.0.1, the address this tool connects from),
``victimUser`` (an account to delete) and ``fuzzAdmin`` (``admin: true``, the one that looks). The
"unknown address" is 127.0.0.2, which on Linux reaches loopback listeners like 127.0.0.1 but is in none of
those lists. ``--guards off`` starts both with Java's behaviour (``aclStrictAdmin``, ``aclStrictBatchSend``,
``aclStrictReads`` false, every list ``*``: SECURITY.md), where the attempts must get through: that run
shows the mode can fail.

Each round runs every attempt once, in a random order, each with random field values (accounts, keys,
secrets, addresses, topics, queues, offsets, bodies, signed or not). After each: the ACL files, the broker's
topics (GET_ALL_TOPIC_CONFIG, ``topics.json``), its config (GET_BROKER_CONFIG and its file), the denied
topics' max offsets, the NameServer's cluster info, routes and KV configs (and ``kvConfig.json``), against
what they were; a read attempt is an escalation when it is answered with the data (SUCCESS), the HA attempt
when a byte comes back. An escalation is a finding (``acl-escalation: <attempt>: <what>``); what it changed
is then put back through the admin account and the files, and the next attempt starts from there.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio
import yaml

from rocketpy.clock import now_ms
from rocketpy.codecs import RemotingCommand, ResponseCode
from rocketpy.codecs.acl_signature import sign_request
from rocketpy.codecs.bodies import TopicConfig
from rocketpy.codecs.bodies.register import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfigSerializeWrapper,
    body_crc32,
)
from rocketpy.codecs.bodies.route import ClusterInfo, KVTable, TopicRouteData
from rocketpy.codecs.codes import MessageConst, RequestCode
from rocketpy.codecs.frame import FrameSplitter
from rocketpy.codecs.ha import build_offset_report
from rocketpy.codecs.headers import (
    CreateAccessConfigRequestHeader,
    CreateTopicRequestHeader,
    DeleteAccessConfigRequestHeader,
    DeleteTopicRequestHeader,
    SendMessageRequestHeaderV2,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
)
from rocketpy.codecs.headers.namesrv import (
    AddWritePermOfBrokerRequestHeader,
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    PutKVConfigRequestHeader,
    RegisterBrokerRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
)
from rocketpy.codecs.headers.query import (
    GetMaxOffsetRequestHeader,
    QueryConsumeQueueRequestHeader,
    ViewMessageRequestHeader,
)
from rocketpy.codecs.message import Message, decode_offset_msg_id, encode_batch, properties_to_string
from rocketpy.javacompat import properties

HOME = "127.0.0.1"  # where the accounts and the admin connect from: in every list
UNKNOWN = "127.0.0.2"  # loopback too, but in no list
USER = ("fuzzUser", "fuzzSecret1")
WHITE = ("whiteUser", "whiteSecret1")
ADMIN = ("fuzzAdmin", "fuzzAdminSecret1")
ACCOUNTS = f"""\
accounts:
  - accessKey: {USER[0]}
    secretKey: {USER[1]}
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - open=PUB|SUB
      - secret=DENY
  - accessKey: {WHITE[0]}
    secretKey: {WHITE[1]}
    whiteRemoteAddress: {HOME}
    admin: false
    defaultTopicPerm: DENY
    topicPerms:
      - open=PUB|SUB
  - accessKey: victimUser
    secretKey: victimSecret1
    admin: false
  - accessKey: {ADMIN[0]}
    secretKey: {ADMIN[1]}
    admin: true
"""
TOPICS = ("open", "secret", "Victim")
DENIED = ("secret", "Victim")
KV_NAMESPACES = ("FUZZ_NS", "ORDER_TOPIC_CONFIG")
#: broker settings the config attempts try to change: none of them stops this run
CONFIG_KEYS = ("fileReservedTime", "deleteWhen", "regionId")
SECRET = b"FUZZ-SECRET-BODY"

#: broker.conf / namesrv.properties lines of each setting (guards on: ours; off: Java's)
GUARDS = {
    "on": ({"aclEnable": "true", "haAllowedAddresses": f"{HOME},slaves"},
           {"registerAllowedAddresses": HOME, "adminAllowedAddresses": HOME}),
    "off": ({"aclEnable": "true", "haAllowedAddresses": "*", "aclStrictAdmin": "false",
             "aclStrictBatchSend": "false", "aclStrictReads": "false"},
            {"registerAllowedAddresses": "*", "adminAllowedAddresses": "*"}),
}


def write_home(home: Path) -> Path:
    """rocketmqHome with conf/plain_acl.yml; the file's path."""
    (home / "conf").mkdir(parents=True, exist_ok=True)
    path = home / "conf" / "plain_acl.yml"
    path.write_text(ACCOUNTS)
    return path


# -- connections -----------------------------------------------------------------------------------------


class Conn:
    """A connection from a chosen local address (127.0.0.1 or 127.0.0.2), one request at a time; opened again
    after the server closed it."""

    def __init__(self, source: str, addr: str) -> None:
        self.source = source
        host, _, port = addr.rpartition(":")
        self.target = (host, int(port))
        self.stream: trio.SocketStream | None = None
        self.frames = FrameSplitter()

    async def open(self) -> trio.SocketStream:
        sock = trio.socket.socket()
        try:
            await sock.bind((self.source, 0))
            await sock.connect(self.target)
        except BaseException:
            sock.close()
            raise
        self.frames = FrameSplitter()
        return trio.SocketStream(sock)

    async def call(self, cmd: RemotingCommand, timeout: float = 10.0) -> RemotingCommand | None:
        """The answer, or None when the connection was closed (then it is opened again next time)."""
        try:
            if self.stream is None:
                self.stream = await self.open()
            await self.stream.send_all(cmd.encode())
            with trio.fail_after(timeout):
                while True:
                    frame = self.frames.next_frame()
                    if frame is not None:
                        answer = RemotingCommand.decode(frame)
                        if answer.opaque == cmd.opaque:
                            return answer
                        continue
                    data = await self.stream.receive_some(65536)
                    if not data:
                        raise trio.BrokenResourceError("closed by the server")
                    self.frames.feed(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            await self.close()
            return None

    async def close(self) -> None:
        if self.stream is not None:
            stream, self.stream = self.stream, None
            with trio.CancelScope(shield=True):
                await stream.aclose()


def request(code: int, header: Any = None, body: bytes | None = None, *, account: tuple[str, str] | None = None,
            access_key: str | None = None) -> RemotingCommand:
    """A request, signed by ``account``, or carrying only ``access_key`` (no signature), or neither."""
    cmd = RemotingCommand.request(code, header, body)
    if account is not None:
        sign_request(cmd, *account)
    elif access_key is not None:
        cmd.ext_fields = {**(cmd.ext_fields or {}), "AccessKey": access_key}
    return cmd


def describe(answer: RemotingCommand | None) -> str:
    if answer is None:
        return "connection closed"
    try:
        name = ResponseCode(answer.code).name
    except ValueError:
        name = str(answer.code)
    remark = " ".join((answer.remark or "").replace("org.apache.rocketmq.acl.common.AclException: ", "").split())[:90]
    return f"{int(answer.code)} {name}" + (f": {remark}" if remark else "")


def send_header(topic: str, batch: bool = False) -> SendMessageRequestHeaderV2:
    props = {MessageConst.PROPERTY_WAIT_STORE_MSG_OK: "true"}
    return SendMessageRequestHeaderV2(
        producer_group="FUZZ_ACL_PG", topic=topic, default_topic="TBW102", default_topic_queue_nums=4, queue_id=0,
        sys_flag=0, born_timestamp=now_ms(), flag=0, properties=properties_to_string(props), reconsume_times=0,
        unit_mode=False, batch=batch, broker_name="broker-a",
    )  # fmt: skip


# -- the servers under attack -----------------------------------------------------------------------------


@dataclass
class Target:
    ns_addr: str
    broker_addr: str
    ha_port: int
    acl_dir: Path  # rocketmqHome/conf: plain_acl.yml and acl/*.yml
    broker_config_file: Path
    topics_file: Path
    kv_file: Path
    admin_b: Conn = field(init=False)
    admin_ns: Conn = field(init=False)
    user_b: Conn = field(init=False)
    acl_text: dict[str, str] = field(default_factory=dict)
    secret_offsets: list[int] = field(default_factory=list)
    topic_configs: dict[str, TopicConfig] = field(default_factory=dict)
    broker_values: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.admin_b = Conn(HOME, self.broker_addr)
        self.admin_ns = Conn(HOME, self.ns_addr)
        self.user_b = Conn(HOME, self.broker_addr)

    async def admin(self, code: int, header: Any = None, body: bytes | None = None) -> RemotingCommand | None:
        return await self.admin_b.call(request(code, header, body, account=ADMIN))

    async def close(self) -> None:
        for conn in (self.admin_b, self.admin_ns, self.user_b):
            await conn.close()

    def acl_files(self) -> dict[str, str]:
        return {str(p.relative_to(self.acl_dir)): p.read_text(errors="replace")
                for p in sorted([*self.acl_dir.glob("*.yml"), *self.acl_dir.glob("acl/*.yml")])}

    async def prepare(self) -> None:
        """The topics, a message in ``secret``, a KV config to delete; then wait for the routes."""
        for topic in TOPICS:
            header = CreateTopicRequestHeader(topic=topic, default_topic="TBW102", read_queue_nums=4,
                                              write_queue_nums=4, perm=6, topic_filter_type="SINGLE_TAG")
            answer = await self.admin(RequestCode.UPDATE_AND_CREATE_TOPIC, header)
            if answer is None or answer.code != ResponseCode.SUCCESS:
                raise RuntimeError(f"cannot create {topic}: {describe(answer)}")
        for topic, body in (("secret", SECRET), ("Victim", SECRET), ("open", b"open body")):
            answer = await self.admin(RequestCode.SEND_MESSAGE_V2, send_header(topic), body)
            if answer is None or answer.code != ResponseCode.SUCCESS:
                raise RuntimeError(f"cannot send to {topic}: {describe(answer)}")
            if topic == "secret":
                self.secret_offsets.append(decode_offset_msg_id(str((answer.ext_fields or {})["msgId"]))[2])
        put = PutKVConfigRequestHeader(namespace="FUZZ_NS", key="kept", value="v")
        answer = await self.admin_ns.call(request(RequestCode.PUT_KV_CONFIG, put))
        if answer is None or answer.code != ResponseCode.SUCCESS:
            raise RuntimeError(f"cannot put a KV config: {describe(answer)}")
        with trio.fail_after(30):
            while not all([await self.route(t) for t in TOPICS]):
                await trio.sleep(0.2)
        self.acl_text = self.acl_files()
        answer = await self.admin(RequestCode.GET_ALL_TOPIC_CONFIG)
        assert answer is not None and answer.body is not None
        table = TopicConfigSerializeWrapper.decode(answer.body).topic_config_table
        self.topic_configs = {t: table[t] for t in TOPICS}
        self.broker_values = (await self.broker_config())[0]

    async def acl_version(self) -> str | None:
        """The ACL files' versions as the broker answers them (None while the admin account is refused)."""
        answer = await self.admin(RequestCode.GET_BROKER_CLUSTER_ACL_INFO)
        if answer is None or answer.code != ResponseCode.SUCCESS:
            return None
        return (answer.ext_fields or {}).get("allAclFileVersion")

    async def route(self, topic: str) -> Any:
        answer = await self.admin_ns.call(request(RequestCode.GET_ROUTEINFO_BY_TOPIC,
                                                  GetRouteInfoRequestHeader(topic=topic)))
        if answer is None or answer.code != ResponseCode.SUCCESS or not answer.body:
            return None
        data = TopicRouteData.decode(answer.body)
        return {"order": data.order_topic_conf,
                "queues": sorted((q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm)
                                 for q in data.queue_datas or ()),
                "brokers": sorted((b.broker_name, sorted((b.broker_addrs or {}).items()))
                                  for b in data.broker_datas or ())}

    async def broker_config(self) -> tuple[dict[str, str], dict[str, str]]:
        answer = await self.admin(RequestCode.GET_BROKER_CONFIG)
        memory = properties.loads((answer.body or b"").decode()) if answer is not None and answer.code == 0 else {}
        try:
            saved = properties.load_file(self.broker_config_file) if self.broker_config_file.exists() else {}
        except Exception as exc:
            saved = {"(unreadable)": repr(exc)}
        pick = (*CONFIG_KEYS, "(unreadable)")
        return {k: memory.get(k, "?") for k in CONFIG_KEYS}, {k: saved[k] for k in pick if k in saved}

    async def state(self) -> dict[str, Any]:
        """What the attempts must not change, by where it is read (a key each)."""
        out: dict[str, Any] = {}
        for name, text in self.acl_files().items():
            try:
                doc = yaml.safe_load(text) or {}
                out[f"acl file {name} accounts"] = {a.get("accessKey"): a for a in doc.get("accounts") or ()}
                out[f"acl file {name} globalWhiteRemoteAddresses"] = doc.get("globalWhiteRemoteAddresses")
            except Exception as exc:
                out[f"acl file {name}"] = repr(exc)
        answer = await self.admin(RequestCode.GET_ALL_TOPIC_CONFIG)
        if answer is not None and answer.code == ResponseCode.SUCCESS and answer.body:
            table = TopicConfigSerializeWrapper.decode(answer.body).topic_config_table
            out["broker topics"] = {n: [c.read_queue_nums, c.write_queue_nums, c.perm] for n, c in table.items()}
        else:
            out["broker topics"] = describe(answer)
        try:
            saved = json.loads(self.topics_file.read_text())["topicConfigTable"]
            out["topics.json"] = sorted(saved)
        except Exception as exc:
            out["topics.json"] = repr(exc)
        memory, saved_config = await self.broker_config()
        out["broker config"], out["broker config file"] = memory, saved_config
        for topic in DENIED:
            for queue in range(4):
                header = GetMaxOffsetRequestHeader(topic=topic, queue_id=queue)
                got = await self.admin(RequestCode.GET_MAX_OFFSET, header)
                out[f"max offset {topic}:{queue}"] = (got.ext_fields or {}).get("offset") if got else None
        answer = await self.admin_ns.call(request(RequestCode.GET_BROKER_CLUSTER_INFO))
        if answer is not None and answer.body:
            info = ClusterInfo.decode(answer.body)
            out["namesrv brokers"] = sorted((n, sorted((b.broker_addrs or {}).items()))
                                            for n, b in (info.broker_addr_table or {}).items())
        for topic in TOPICS:
            out[f"namesrv route {topic}"] = await self.route(topic)
        for namespace in KV_NAMESPACES:
            got = await self.admin_ns.call(request(RequestCode.GET_KVLIST_BY_NAMESPACE,
                                                   GetKVListByNamespaceRequestHeader(namespace=namespace)))
            kv = KVTable.decode(got.body).table if got is not None and got.code == 0 and got.body else {}
            out[f"namesrv kv {namespace}"] = dict(sorted(kv.items()))
        try:
            saved_kv = json.loads(self.kv_file.read_text())["configTable"] if self.kv_file.exists() else {}
            # a namespace stays, empty, after its last key went (as Java's): not a change
            out["kvConfig.json"] = {ns: kv for ns, kv in saved_kv.items() if kv}
        except Exception as exc:
            out["kvConfig.json"] = repr(exc)
        return out

    async def put_back(self, changed: list[str], was: dict[str, Any]) -> None:
        """What an escalation changed, through the files and the admin account (ACL first: the admin's own
        account may be what changed)."""
        if any(k.startswith("acl file") for k in changed):
            for path in [*self.acl_dir.glob("*.yml"), *self.acl_dir.glob("acl/*.yml")]:
                if str(path.relative_to(self.acl_dir)) not in self.acl_text:
                    path.unlink()
            before = await self.acl_version()
            for name, text in self.acl_text.items():
                (self.acl_dir / name).write_text(text)
            with trio.move_on_after(15):  # the broker's watcher reloads the files within 5 s
                while await self.acl_version() in (before, None):
                    await trio.sleep(0.5)
        if "broker config" in changed or "broker config file" in changed:
            body = "".join(f"{k}={v}\n" for k, v in self.broker_values.items()).encode()
            await self.admin(RequestCode.UPDATE_BROKER_CONFIG, None, body)
        if any(k in changed for k in ("broker topics", "topics.json")) or any(
                k.startswith("namesrv route") for k in changed):
            # topics deleted (in the broker or only in the NameServer's routes): made again, which registers
            # the broker again; topics made: deleted
            answer = await self.admin(RequestCode.GET_ALL_TOPIC_CONFIG)
            table = TopicConfigSerializeWrapper.decode(answer.body).topic_config_table if answer and answer.body else {}
            for topic, cfg in self.topic_configs.items():
                header = CreateTopicRequestHeader(
                    topic=topic, default_topic="TBW102", read_queue_nums=cfg.read_queue_nums,
                    write_queue_nums=cfg.write_queue_nums, perm=cfg.perm, topic_filter_type="SINGLE_TAG")
                await self.admin(RequestCode.UPDATE_AND_CREATE_TOPIC, header)
            listed = was.get("broker topics")
            base = set(listed) if isinstance(listed, dict) else set()
            for topic in set(table) - base:
                await self.admin(RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic=topic))
            await self.admin_ns.call(request(RequestCode.ADD_WRITE_PERM_OF_BROKER,
                                             AddWritePermOfBrokerRequestHeader(broker_name="broker-a")))
        for namespace in KV_NAMESPACES:
            key = f"namesrv kv {namespace}"
            if key in changed or "kvConfig.json" in changed:
                now = await self.admin_ns.call(request(RequestCode.GET_KVLIST_BY_NAMESPACE,
                                                       GetKVListByNamespaceRequestHeader(namespace=namespace)))
                kv = KVTable.decode(now.body).table if now is not None and now.code == 0 and now.body else {}
                for k in set(kv) - set(was.get(key, {})):
                    await self.admin_ns.call(request(RequestCode.DELETE_KV_CONFIG,
                                                     DeleteKVConfigRequestHeader(namespace=namespace, key=k)))
                for k, v in was.get(key, {}).items():
                    await self.admin_ns.call(request(RequestCode.PUT_KV_CONFIG,
                                                     PutKVConfigRequestHeader(namespace=namespace, key=k, value=v)))


# -- the attempts ------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What one attempt sent and what it was answered; ``leak``: a read answered with the data."""

    sent: str
    answers: list[str]
    leak: str | None = None


Attempt = Callable[[Target, random.Random], Awaitable[Outcome]]


def _name(rng: random.Random) -> str:
    return rng.choice(["sneaky", "fuzzAdmin2", "x" * rng.randint(1, 40), "Evil_" + str(rng.randint(0, 999))])


def _signer(rng: random.Random) -> tuple[str, dict[str, Any]]:
    """How a normal account sends: fuzzUser signed, or whiteUser unsigned from its white address."""
    if rng.random() < 0.6:
        return "fuzzUser signed", {"account": USER}
    return "whiteUser unsigned (its white address)", {"access_key": WHITE[0]}


async def make_admin(t: Target, rng: random.Random) -> Outcome:
    """UPDATE_AND_CREATE_ACL_CONFIG (50): fuzzUser, another account or a new one with admin: true."""
    how, sign = _signer(rng)
    target = rng.choice([USER[0], USER[0], WHITE[0], "victimUser", ADMIN[0], _name(rng)])
    header = CreateAccessConfigRequestHeader(
        access_key=target, secret_key=rng.choice([USER[1], "s3cretKey" + str(rng.randint(0, 99)), "a" * 40]),
        admin=rng.random() < 0.8, white_remote_address=rng.choice([None, HOME, "*", "127.0.0.*", UNKNOWN]),
        default_topic_perm=rng.choice([None, "PUB|SUB", "DENY", "SUB"]),
        topic_perms=rng.choice([None, "secret=PUB|SUB", "secret=PUB|SUB,Victim=PUB|SUB"]),
        group_perms=rng.choice([None, "g=SUB"]))  # fmt: skip
    answer = await t.user_b.call(request(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, header, **sign))
    return Outcome(f"{how}: {target} admin={header.admin} white={header.white_remote_address}", [describe(answer)])


async def delete_account(t: Target, rng: random.Random) -> Outcome:
    """DELETE_ACL_CONFIG (51): another account, the admin's, or its own."""
    how, sign = _signer(rng)
    victim = rng.choice(["victimUser", ADMIN[0], WHITE[0], USER[0]])
    answer = await t.user_b.call(request(RequestCode.DELETE_ACL_CONFIG, DeleteAccessConfigRequestHeader(
        access_key=victim), **sign))
    return Outcome(f"{how}: delete {victim}", [describe(answer)])


def _white(rng: random.Random, t: Target) -> UpdateGlobalWhiteAddrsConfigRequestHeader:
    path = rng.choice([str(t.acl_dir / "plain_acl.yml"), str(t.acl_dir / "plain_acl.yml"), "conf/plain_acl.yml",
                       str(t.acl_dir / "acl" / "extra.yml")])
    return UpdateGlobalWhiteAddrsConfigRequestHeader(
        global_white_addrs=rng.choice([HOME, "127.0.0.*", "*", f"{HOME},{UNKNOWN}", "127.0.0.1-2", "127.0.0.{1,2}"]),
        acl_file_full_path=path)


async def global_white(t: Target, rng: random.Random) -> Outcome:
    """UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53), then (half the time) what the issue did next from the address:
    an unsigned DELETE_TOPIC_IN_BROKER."""
    how, sign = _signer(rng)
    header = _white(rng, t)
    answers = [describe(await t.user_b.call(request(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, header, **sign)))]
    sent = f"{how}: white {header.global_white_addrs!r} in {header.acl_file_full_path}"
    if rng.random() < 0.5:
        await trio.sleep(0.1)
        delete = DeleteTopicRequestHeader(topic="Victim")
        answer = await t.user_b.call(request(RequestCode.DELETE_TOPIC_IN_BROKER, delete))
        answers.append(describe(answer))
        sent += ", then unsigned DELETE_TOPIC_IN_BROKER Victim"
    return Outcome(sent, answers)


def _unsigned(rng: random.Random) -> tuple[str, dict[str, Any]]:
    ways: list[tuple[str, dict[str, Any]]] = [
        ("no AccessKey", {}), ("whiteUser unsigned (its white address)", {"access_key": WHITE[0]}),
        ("fuzzUser unsigned", {"access_key": USER[0]}), ("fuzzUser signed", {"account": USER})]
    return rng.choice(ways)


async def delete_topic(t: Target, rng: random.Random) -> Outcome:
    how, sign = _unsigned(rng)
    topic = rng.choice(TOPICS)
    answer = await t.user_b.call(request(RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic=topic),
                                         **sign))
    return Outcome(f"{how}: DELETE_TOPIC_IN_BROKER {topic}", [describe(answer)])


async def broker_config(t: Target, rng: random.Random) -> Outcome:
    how, sign = _unsigned(rng)
    values = {"fileReservedTime": str(rng.randint(1, 999)), "deleteWhen": f"{rng.randint(0, 23):02d}",
              "regionId": f"Region{rng.randint(0, 999)}"}
    body = "".join(f"{k}={values[k]}\n" for k in rng.sample(CONFIG_KEYS, rng.randint(1, 3))).encode()
    answer = await t.user_b.call(request(RequestCode.UPDATE_BROKER_CONFIG, None, body, **sign))
    return Outcome(f"{how}: UPDATE_BROKER_CONFIG {body!r}", [describe(answer)])


async def batch_send(t: Target, rng: random.Random) -> Outcome:
    topic = rng.choice(DENIED)
    msgs = [Message(topic=topic, body=rng.randbytes(rng.randint(1, 64)), properties={"KEYS": f"k{i}"})
            for i in range(rng.randint(1, 5))]
    header = send_header(topic, batch=True)
    header.queue_id = rng.randint(0, 3)
    answer = await t.user_b.call(request(RequestCode.SEND_BATCH_MESSAGE, header, encode_batch(msgs), account=USER))
    return Outcome(f"fuzzUser signed: SEND_BATCH_MESSAGE of {len(msgs)} into {topic}:{header.queue_id}",
                   [describe(answer)])


def _read_leak(answer: RemotingCommand | None, what: str) -> str | None:
    return f"{what} answered SUCCESS" if answer is not None and answer.code == ResponseCode.SUCCESS else None


async def view_message(t: Target, rng: random.Random) -> Outcome:
    offset = rng.choice(t.secret_offsets)
    answer = await t.user_b.call(request(RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset=offset),
                                         account=USER))
    leak = _read_leak(answer, f"VIEW_MESSAGE_BY_ID {offset}")
    if leak and answer is not None and SECRET in (answer.body or b""):
        leak += ", the secret body in it"
    return Outcome(f"fuzzUser signed: VIEW_MESSAGE_BY_ID secret@{offset}", [describe(answer)], leak)


async def query_consume_queue(t: Target, rng: random.Random) -> Outcome:
    topic, queue = rng.choice(DENIED), rng.choice([0, 0, 0, rng.randint(1, 3)])  # the messages are in queue 0
    header = QueryConsumeQueueRequestHeader(topic=topic, queue_id=queue, index=rng.randint(0, 2),
                                            count=rng.randint(1, 32), consumer_group=rng.choice([None, "GID_FUZZ"]))
    answer = await t.user_b.call(request(RequestCode.QUERY_CONSUME_QUEUE, header, account=USER))
    return Outcome(f"fuzzUser signed: QUERY_CONSUME_QUEUE {topic}:{queue}", [describe(answer)],
                   _read_leak(answer, f"QUERY_CONSUME_QUEUE {topic}"))


async def max_offset(t: Target, rng: random.Random) -> Outcome:
    topic, queue = rng.choice(DENIED), rng.randint(0, 3)
    answer = await t.user_b.call(request(RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader(
        topic=topic, queue_id=queue), account=USER))
    return Outcome(f"fuzzUser signed: GET_MAX_OFFSET {topic}:{queue}", [describe(answer)],
                   _read_leak(answer, f"GET_MAX_OFFSET {topic}"))


async def ha_port(t: Target, rng: random.Random) -> Outcome:
    """8 bytes (a slave's offset report) to the HA port from 127.0.0.2; Java streams the CommitLog back."""
    offset = rng.choice([0, 0, rng.randint(0, max(t.secret_offsets))])
    got = bytearray()
    sock = trio.socket.socket()
    try:
        await sock.bind((UNKNOWN, 0))
        await sock.connect(("127.0.0.1", t.ha_port))
        stream = trio.SocketStream(sock)
        try:
            await stream.send_all(build_offset_report(offset))
            with trio.move_on_after(rng.uniform(0.5, 1.5)):
                while chunk := await stream.receive_some(65536):
                    got += chunk
        except (trio.BrokenResourceError, OSError):
            pass
        finally:
            await stream.aclose()
    except OSError as exc:
        sock.close()
        return Outcome(f"{UNKNOWN}: offset report {offset}", [f"connect failed: {exc}"])
    answer = f"{len(got)} bytes back" if got else "closed, nothing sent"
    leak = None
    if got:
        leak = f"the HA port sent {len(got)} bytes" + (", the secret body among them" if SECRET in got else "")
    return Outcome(f"{UNKNOWN}: offset report {offset}", [answer], leak)


def _forged_registration(rng: random.Random) -> tuple[str, RemotingCommand]:
    name, broker_id = rng.choice([("evil-broker", 0), ("broker-a", rng.randint(1, 3)), (_name(rng), 0)])
    addr = f"{UNKNOWN}:{rng.randint(20000, 40000)}"
    topics = {t: TopicConfig(topic_name=t, read_queue_nums=rng.randint(1, 16), write_queue_nums=rng.randint(1, 16),
                             perm=6) for t in rng.sample([*TOPICS, "EvilTopic"], rng.randint(1, 3))}  # fmt: skip
    compressed = rng.random() < 0.3
    wrapper = TopicConfigSerializeWrapper(topic_config_table={}, data_version=DataVersion(timestamp=now_ms(),
                                                                                           counter=rng.randint(1, 9)))
    raw = RegisterBrokerBody(topic_config_serialize_wrapper=wrapper, filter_server_list=[]).encode_with_topics(
        topics, compress=compressed)
    header = RegisterBrokerRequestHeader(
        broker_name=name, broker_addr=addr, cluster_name="DefaultCluster", ha_server_addr=f"{UNKNOWN}:10912",
        broker_id=broker_id, compressed=compressed, body_crc32=body_crc32(raw))  # fmt: skip
    return f"REGISTER_BROKER {name}[{broker_id}] at {addr} with {sorted(topics)}", request(
        RequestCode.REGISTER_BROKER, header, raw)


class NamesrvAttempt:
    """An attempt on the NameServer from 127.0.0.2; its connection stays open until the state is read (a
    registration goes with its connection)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.__name__ = f"namesrv_{kind}"
        self.conn: Conn | None = None

    async def __call__(self, t: Target, rng: random.Random) -> Outcome:
        self.conn = Conn(UNKNOWN, t.ns_addr)
        if self.kind == "register":
            sent, cmd = _forged_registration(rng)
        elif self.kind == "put_kv":
            namespace = rng.choice(KV_NAMESPACES)
            key = rng.choice(["kept", "open", "Victim", _name(rng)])
            value = rng.choice(["broker-a:8", "evil-broker:1", "v" * rng.randint(1, 100)])
            sent, cmd = f"PUT_KV_CONFIG {namespace}/{key}={value}", request(
                RequestCode.PUT_KV_CONFIG, PutKVConfigRequestHeader(namespace=namespace, key=key, value=value))
        elif self.kind == "delete_kv":
            sent, cmd = "DELETE_KV_CONFIG FUZZ_NS/kept", request(
                RequestCode.DELETE_KV_CONFIG, DeleteKVConfigRequestHeader(namespace="FUZZ_NS", key="kept"))
        elif self.kind == "wipe":
            sent, cmd = "WIPE_WRITE_PERM_OF_BROKER broker-a", request(
                RequestCode.WIPE_WRITE_PERM_OF_BROKER, WipeWritePermOfBrokerRequestHeader(broker_name="broker-a"))
        else:
            topic = rng.choice(TOPICS)
            sent, cmd = f"DELETE_TOPIC_IN_NAMESRV {topic}", request(
                RequestCode.DELETE_TOPIC_IN_NAMESRV, DeleteTopicFromNamesrvRequestHeader(topic=topic))
        return Outcome(f"{UNKNOWN}: {sent}", [describe(await self.conn.call(cmd))])

    async def done(self) -> None:
        if self.conn is not None:
            await self.conn.close()
            self.conn = None


ATTEMPTS: dict[str, Attempt] = {
    "UPDATE_AND_CREATE_ACL_CONFIG (50): make itself admin": make_admin,
    "DELETE_ACL_CONFIG (51): delete an account": delete_account,
    "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53): white-list its address": global_white,
    "DELETE_TOPIC_IN_BROKER unsigned": delete_topic,
    "UPDATE_BROKER_CONFIG unsigned": broker_config,
    "SEND_BATCH_MESSAGE into a denied topic": batch_send,
    "VIEW_MESSAGE_BY_ID of a denied topic": view_message,
    "QUERY_CONSUME_QUEUE of a denied topic": query_consume_queue,
    "GET_MAX_OFFSET of a denied topic": max_offset,
    "HA port from an unknown address": ha_port,
    "NameServer REGISTER_BROKER from an unknown address": NamesrvAttempt("register"),
    "NameServer PUT_KV_CONFIG from an unknown address": NamesrvAttempt("put_kv"),
    "NameServer DELETE_KV_CONFIG from an unknown address": NamesrvAttempt("delete_kv"),
    "NameServer WIPE_WRITE_PERM_OF_BROKER from an unknown address": NamesrvAttempt("wipe"),
    "NameServer DELETE_TOPIC_IN_NAMESRV from an unknown address": NamesrvAttempt("delete_topic"),
}


def diff(was: dict[str, Any], now: dict[str, Any], *, offsets: bool = True) -> list[str]:
    """The keys of the state that differ (``offsets``: the max offsets too)."""
    return sorted(k for k in was.keys() | now.keys()
                  if was.get(k) != now.get(k) and (offsets or not k.startswith("max offset")))


def change(was: Any, now: Any) -> str:
    """One change, short: the entries of a table that went, came or changed, or the values."""
    def short(value: Any) -> str:
        return json.dumps(value, default=str)[:160]

    if isinstance(was, dict) and isinstance(now, dict):
        parts = [f"-{k}" for k in was.keys() - now.keys()] + [f"+{k}={short(now[k])}" for k in now.keys() - was.keys()]
        parts += [f"{k}: {short(was[k])} -> {short(now[k])}" for k in was.keys() & now.keys() if was[k] != now[k]]
        return "; ".join(sorted(parts))
    return f"{short(was)} -> {short(now)}"


async def attack(t: Target, seconds: float, rng: random.Random, findings: dict[str, dict[str, Any]],
                 out: Path) -> dict[str, Any]:
    """Rounds of every attempt in a random order for ``seconds`` (one round at least); the report by attempt."""
    report: dict[str, dict[str, Any]] = {name: {"sent": 0, "answers": {}, "escalations": 0, "examples": []}
                                         for name in ATTEMPTS}
    rounds = 0
    end = time.monotonic() + seconds
    was = await t.state()
    while rounds == 0 or time.monotonic() < end:
        rounds += 1
        order = list(ATTEMPTS)
        rng.shuffle(order)
        for name in order:
            attempt = ATTEMPTS[name]
            outcome = await attempt(t, rng)
            now = await t.state()
            if isinstance(attempt, NamesrvAttempt):
                await attempt.done()
            entry = report[name]
            entry["sent"] += 1
            for answer in outcome.answers:
                entry["answers"][answer] = entry["answers"].get(answer, 0) + 1
            changed = diff(was, now)
            what = [f"{k}: {change(was.get(k), now.get(k))}" for k in changed]
            if outcome.leak:
                what.insert(0, outcome.leak)
            if not what:
                continue
            entry["escalations"] += 1
            if len(entry["examples"]) < 3:
                entry["examples"].append({"sent": outcome.sent, "answers": outcome.answers, "changed": what})
            key = f"acl-escalation: {name}: {(outcome.leak or changed[0]).split(',')[0]}"
            if key not in findings:
                finding = {"key": key, "count": 0, "sent": outcome.sent, "answers": outcome.answers, "changed": what}
                findings[key] = finding
                (out / f"finding-{len(findings):03d}.json").write_text(json.dumps(finding, indent=1, default=str))
                print(f"FINDING {key}: {outcome.sent} -> {outcome.answers}; {what[:3]}", flush=True)
            findings[key]["count"] += 1
            if changed:
                await t.put_back(changed, was)
                with trio.move_on_after(20):
                    while diff(was, await t.state(), offsets=False):
                        await trio.sleep(0.5)
                now = await t.state()
                left = diff(was, now, offsets=False)
                if left:
                    print(f"  not put back: {left}", flush=True)
                was = now  # watched from here on (a batch's messages stay)
    return {"rounds": rounds, "attempts": report}


# -- the run -----------------------------------------------------------------------------------------------


@asynccontextmanager
async def inprocess_servers(tmp: Path, guards: str) -> AsyncIterator[Target]:
    from rocketpy.namesrv.config import NamesrvConfig
    from rocketpy.namesrv.server import NameServer
    from rocketpy.testing import running_broker

    broker_props, ns_props = GUARDS[guards]
    acl_file = write_home(tmp / "home")
    config = NamesrvConfig(listen_port=0, kv_config_path=str(tmp / "kvConfig.json"),
                           config_store_path=str(tmp / "namesrv.properties"))
    config.apply(ns_props, strict=True)
    async with trio.open_nursery() as nursery:
        ns = await nursery.start(NameServer(config).run)
        async with running_broker(str(tmp / "store"), namesrvAddr=ns.address, rocketmqHome=str(tmp / "home"),
                                  **broker_props) as broker:
            assert broker.ha.service is not None and broker.ha.service.port is not None
            yield Target(ns.address, broker.address, broker.ha.service.port, acl_file.parent,
                         tmp / "store" / "config" / "broker.properties", tmp / "store" / "config" / "topics.json",
                         tmp / "kvConfig.json")
        nursery.cancel_scope.cancel()


async def run(args: Any, out: Path) -> int:
    """``--mode acl-escalation``: the servers (in this process or as their own), the attempts, the report;
    1 when an attempt got through or a server logged a traceback."""
    from server_process import kv_config_path, start_servers, stop_server

    rng = random.Random(args.seed)
    findings: dict[str, dict[str, Any]] = {}
    tracebacks: list[str] = []

    class Tracebacks(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.exc_info and record.name.startswith("rocketpy"):
                tracebacks.append(f"{record.name}: {record.getMessage()[:200]}")

    handler = Tracebacks(logging.ERROR)
    logging.getLogger().addHandler(handler)
    started = time.monotonic()
    result: dict[str, Any] = {}
    import tempfile

    try:
        with tempfile.TemporaryDirectory(prefix="rocketpy-fuzz-acl-") as tmp_name:
            tmp = Path(tmp_name)
            if args.servers == "process":
                broker_props, ns_props = GUARDS[args.guards]
                acl_file = write_home(tmp / "home")
                procs = await start_servers(tmp, broker_extra={**broker_props, "rocketmqHome": str(tmp / "home")},
                                            namesrv_extra=ns_props)
                try:  # (the HA port is listenPort + 1, as Java's BrokerStartup sets it)
                    target = Target(procs[0].addr, procs[1].addr, procs[1].port + 1, acl_file.parent,
                                    tmp / "broker.conf", tmp / "store" / "config" / "topics.json", kv_config_path(tmp))
                    await target.prepare()
                    result = await attack(target, args.duration, rng, findings, out)
                    await target.close()
                finally:
                    with trio.CancelScope(shield=True):
                        for p in procs:
                            await stop_server(p)
                for p in procs:
                    p.log.scan()
                    tracebacks.extend(f"{p.name}: {k}" for k in p.log.unique)
            else:
                async with inprocess_servers(tmp, args.guards) as target:
                    await target.prepare()
                    result = await attack(target, args.duration, rng, findings, out)
                    await target.close()
    finally:
        logging.getLogger().removeHandler(handler)
    for key in tracebacks:
        findings.setdefault(f"traceback: {key}", {"key": key, "count": 1})
    summary = {
        "mode": "acl-escalation", "guards": args.guards, "servers": args.servers, "seed": args.seed,
        "seconds": round(time.monotonic() - started), "rounds": result.get("rounds"),
        "escalations": sum(a["escalations"] for a in result.get("attempts", {}).values()),
        "unique_findings": sorted(findings), "tracebacks": tracebacks[:20], "attempts": result.get("attempts"),
    }
    prev = out / "stats.json"
    runs = json.loads(prev.read_text()) if prev.exists() else []
    runs.append(summary)
    prev.write_text(json.dumps(runs, indent=1, default=str))
    print(f"{'attempt':<64} {'sent':>5} {'escalated':>9}  answers")
    for name, entry in (result.get("attempts") or {}).items():
        answers = "; ".join(f"{a} x{n}" for a, n in sorted(entry["answers"].items(), key=lambda kv: -kv[1])[:3])
        print(f"{name:<64} {entry['sent']:>5} {entry['escalations']:>9}  {answers}")
    print(json.dumps({k: v for k, v in summary.items() if k != "attempts"}, indent=1))
    return 1 if findings else 0


__all__ = ["ATTEMPTS", "GUARDS", "Target", "attack", "run"]
