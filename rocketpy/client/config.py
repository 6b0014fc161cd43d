"""Client settings shared by producers and consumers (Java's ClientConfig), and the client id."""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import socket
import ssl
import time

from ..codecs.acl_signature import AclClientRPCHook, SessionCredentials
from ..codecs.codes import LanguageCode
from ..remoting.tls import TlsConfig

#: where the name-server list comes from when none is given, in this order
NAMESRV_ENV = ("ROCKETMQ_NAMESRV", "NAMESRV_ADDR")
DEFAULT_NAMESRV = "127.0.0.1:9876"
DEFAULT_INSTANCE_NAME = "DEFAULT"


def default_namesrv() -> str:
    for name in NAMESRV_ENV:
        value = os.environ.get(name)
        if value:
            return value
    return DEFAULT_NAMESRV


def local_ip() -> str:
    """A non-loopback IPv4 address of this host when one exists (RemotingUtil.getLocalAddress)."""
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            ip = ipaddress.ip_address(info[4][0])
            if not ip.is_loopback:
                return str(ip)
    except OSError:
        pass
    return "127.0.0.1"


@dataclasses.dataclass(slots=True)
class ClientConfig:
    """Settings of one client instance; times are seconds (Java keeps milliseconds)."""

    namesrv_addr: str = dataclasses.field(default_factory=default_namesrv)
    client_ip: str = dataclasses.field(default_factory=local_ip)
    #: producers and consumers of one trio run whose settings are equal (name servers, instance name, ...) share
    #: one ClientInstance; with "DEFAULT" that instance's id gets pid#nanotime as in Java 4.9.8, and a group already
    #: on it moves to another instance. An explicit name is the client id: its groups must differ.
    instance_name: str = DEFAULT_INSTANCE_NAME
    unit_name: str | None = None
    poll_name_server_interval: float = 30.0
    heartbeat_broker_interval: float = 30.0
    persist_consumer_offset_interval: float = 5.0
    rebalance_interval: float = 20.0
    mq_client_api_timeout: float = 3.0
    vip_channel_enabled: bool = False
    #: what the heartbeat reports (LanguageCode 3; the 4.9.8 broker treats only CPP differently)
    language: LanguageCode = LanguageCode.PYTHON
    #: TLS to the NameServers and brokers (Java's useTLS, from -Dtls.enable)
    use_tls: bool = False
    #: the tls.client.* settings; None: Java's defaults (test mode: any server is trusted) then tls.config.file
    tls: TlsConfig | None = None
    #: ACL credentials (Java's SessionCredentials for an AclClientRPCHook): with both keys set every request
    #: is signed; the security token is optional
    access_key: str | None = None
    secret_key: str | None = None
    security_token: str | None = None
    #: Java's namespace: the topics and groups of producers and consumers on this config are ``<namespace>%<name>``
    #: on the wire (client.namespace); their users see the names without it
    namespace: str | None = None

    def rpc_hook(self) -> AclClientRPCHook | None:
        """The request signer the credentials ask for, None without them."""
        if not self.access_key and not self.secret_key:
            return None
        return AclClientRPCHook(SessionCredentials(self.access_key or "", self.secret_key or "",
                                                   self.security_token))

    def ssl_context(self) -> ssl.SSLContext | None:
        """The client's SSL context, None without TLS (blocking: reads tls.config.file and key files)."""
        if not self.use_tls:
            return None
        tls = self.tls if self.tls is not None else TlsConfig.from_properties({})
        return tls.client_context()

    def resolved(self) -> ClientConfig:
        """A copy whose default instance name became pid#nanotime (Java's changeInstanceNameToPID)."""
        if self.instance_name != DEFAULT_INSTANCE_NAME:
            return self
        return dataclasses.replace(self, instance_name=f"{os.getpid()}#{time.monotonic_ns()}")

    def sharing_key(self) -> tuple[object, ...]:
        """Clients whose configs give equal keys share one instance (in one trio run)."""
        fields = dataclasses.astuple(self)
        return (tuple(self.namesrv_list), *fields[1:])

    @property
    def namesrv_list(self) -> list[str]:
        return [a.strip() for a in self.namesrv_addr.split(";") if a.strip()]

    def client_id(self) -> str:
        """ip@instanceName[@unitName], the id brokers know this client by."""
        cid = f"{self.client_ip}@{self.instance_name}"
        if self.unit_name:
            cid += f"@{self.unit_name}"
        return cid
