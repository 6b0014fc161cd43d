"""TLS as the Java 4.9.8 servers and clients set it up (TlsSystemConfig, TlsHelper, TlsMode).

Servers run in one of three modes: ``disabled`` (plain only), ``permissive`` (the default:
plain and TLS on the same port, told apart by the first byte a client sends, 0x16 being a
TLS handshake record) and ``enforcing`` (TLS only). In test mode (the default) a server
uses a self-signed certificate made at start and a client trusts any server. Clients use
TLS when ``tls.enable`` is true.

The ``tls.*`` keys are Java system properties; here they come from the broker's or the
NameServer's config file (or a client's settings), then the file named by
``tls.config.file`` overrides all of them but ``tls.server.mode`` and ``tls.enable``, as
TlsHelper.buildSslContext reads it.

Where Python's ssl differs: a client certificate a server asks for is always verified
(against ``tls.server.trustCertPath``, else the system's CAs), even with
``tls.server.authClient=false`` where Java's insecure trust manager accepts any.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import functools
import logging
import os
import socket
import ssl
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import trio

log = logging.getLogger("rocketpy.remoting")

TLS_SERVER_MODE = "tls.server.mode"
TLS_ENABLE = "tls.enable"
TLS_CONFIG_FILE = "tls.config.file"
TLS_TEST_MODE_ENABLE = "tls.test.mode.enable"
TLS_SERVER_NEED_CLIENT_AUTH = "tls.server.need.client.auth"
TLS_SERVER_KEYPATH = "tls.server.keyPath"
TLS_SERVER_KEYPASSWORD = "tls.server.keyPassword"
TLS_SERVER_CERTPATH = "tls.server.certPath"
TLS_SERVER_AUTHCLIENT = "tls.server.authClient"
TLS_SERVER_TRUSTCERTPATH = "tls.server.trustCertPath"
TLS_CLIENT_KEYPATH = "tls.client.keyPath"
TLS_CLIENT_KEYPASSWORD = "tls.client.keyPassword"
TLS_CLIENT_CERTPATH = "tls.client.certPath"
TLS_CLIENT_AUTHSERVER = "tls.client.authServer"
TLS_CLIENT_TRUSTCERTPATH = "tls.client.trustCertPath"

DEFAULT_CONFIG_FILE = "/etc/rocketmq/tls.properties"
#: the first byte of a TLS record carrying a handshake (NettyRemotingServer's HandshakeHandler)
HANDSHAKE_MAGIC = 0x16
#: seconds a TLS handshake may take once its first byte arrived
HANDSHAKE_TIMEOUT = 10.0


class TlsMode(enum.Enum):
    DISABLED = "disabled"
    PERMISSIVE = "permissive"
    ENFORCING = "enforcing"

    @classmethod
    def parse(cls, text: str | None) -> TlsMode:
        """TlsMode.parse: an exact (lower-case) name, anything else is permissive."""
        for mode in cls:
            if mode.value == text:
                return mode
        return cls.PERMISSIVE


class TlsConfigError(OSError):
    """A TLS setting that cannot be used (unreadable key or certificate, wrong password); an OSError so
    the server commands report it in one line as they report a port already taken."""

    def __str__(self) -> str:
        return f"TLS settings: {super().__str__()}"


def _bool(text: str | None, default: bool) -> bool:
    return default if text is None else text.strip().lower() == "true"  # Boolean.parseBoolean


#: config key -> (attribute, is boolean)
_KEYS: dict[str, tuple[str, bool]] = {
    TLS_TEST_MODE_ENABLE: ("test_mode", True),
    TLS_SERVER_NEED_CLIENT_AUTH: ("server_need_client_auth", False),
    TLS_SERVER_KEYPATH: ("server_key_path", False),
    TLS_SERVER_KEYPASSWORD: ("server_key_password", False),
    TLS_SERVER_CERTPATH: ("server_cert_path", False),
    TLS_SERVER_AUTHCLIENT: ("server_auth_client", True),
    TLS_SERVER_TRUSTCERTPATH: ("server_trust_cert_path", False),
    TLS_CLIENT_KEYPATH: ("client_key_path", False),
    TLS_CLIENT_KEYPASSWORD: ("client_key_password", False),
    TLS_CLIENT_CERTPATH: ("client_cert_path", False),
    TLS_CLIENT_AUTHSERVER: ("client_auth_server", True),
    TLS_CLIENT_TRUSTCERTPATH: ("client_trust_cert_path", False),
}
#: every key this module reads (configs accept them without a warning)
TLS_KEYS = frozenset({TLS_SERVER_MODE, TLS_ENABLE, TLS_CONFIG_FILE, *_KEYS})


@dataclasses.dataclass(frozen=True)
class TlsConfig:
    """TlsSystemConfig's settings, with Java's defaults."""

    mode: TlsMode = TlsMode.PERMISSIVE
    enable: bool = False
    config_file: str = DEFAULT_CONFIG_FILE
    test_mode: bool = True
    server_need_client_auth: str = "none"
    server_key_path: str | None = None
    server_key_password: str | None = None
    server_cert_path: str | None = None
    server_auth_client: bool = False
    server_trust_cert_path: str | None = None
    client_key_path: str | None = None
    client_key_password: str | None = None
    client_cert_path: str | None = None
    client_auth_server: bool = False
    client_trust_cert_path: str | None = None

    @classmethod
    def from_properties(cls, props: Mapping[str, str], *, read_file: bool = True) -> TlsConfig:
        """The ``tls.*`` keys of ``props``, then those of ``tls.config.file`` when it is readable
        (blocking file I/O: call it at start, or from a worker thread)."""
        cfg = cls(
            mode=TlsMode.parse(props.get(TLS_SERVER_MODE, TlsMode.PERMISSIVE.value)),
            enable=_bool(props.get(TLS_ENABLE), False),
            config_file=props.get(TLS_CONFIG_FILE, DEFAULT_CONFIG_FILE),
        )
        cfg = cfg.updated(props)
        return cfg.with_config_file() if read_file else cfg

    def updated(self, props: Mapping[str, str]) -> TlsConfig:
        """This config with the keys of ``props`` (all but mode, enable and the file name) applied."""
        changes: dict[str, Any] = {}
        for key, (attr, is_bool) in _KEYS.items():
            text = props.get(key)
            if text is None:
                continue
            changes[attr] = _bool(text, getattr(self, attr)) if is_bool else text
        return dataclasses.replace(self, **changes) if changes else self

    def with_config_file(self) -> TlsConfig:
        """TlsHelper.extractTlsConfigFromFile: a missing or unreadable file is skipped."""
        from ..javacompat import properties

        path = Path(self.config_file)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            log.debug("Tls config file %s doesn't exist, skip it", path)
            return self
        return self.updated(properties.loads(text))

    # -- contexts --------------------------------------------------------------------------
    def server_context(self) -> ssl.SSLContext | None:
        """The server's SSL context (None when disabled); TlsConfigError when keys do not load."""
        if self.mode is TlsMode.DISABLED:
            return None
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        if self.test_mode:
            try:
                cert, key = self_signed_pem()
            except ImportError:
                raise TlsConfigError("TLS test mode makes its certificate with the cryptography package, "
                                     "which is not installed") from None
            _load_chain_from_memory(ctx, cert, key)
            return ctx
        if not self.server_cert_path or not self.server_key_path:
            raise TlsConfigError(f"{TLS_SERVER_CERTPATH} and {TLS_SERVER_KEYPATH} are needed when "
                                 f"{TLS_TEST_MODE_ENABLE}=false")
        _load_chain(ctx, self.server_cert_path, self.server_key_path, self.server_key_password, "server")
        auth = (self.server_need_client_auth or "none").strip().lower()
        if auth in ("optional", "require"):
            try:
                if self.server_trust_cert_path:
                    ctx.load_verify_locations(self.server_trust_cert_path)
                else:
                    ctx.load_default_certs(ssl.Purpose.CLIENT_AUTH)
            except (OSError, ssl.SSLError) as exc:
                raise TlsConfigError(f"{TLS_SERVER_TRUSTCERTPATH}={self.server_trust_cert_path}: {exc}") from None
            ctx.verify_mode = ssl.CERT_REQUIRED if auth == "require" else ssl.CERT_OPTIONAL
        return ctx

    def client_context(self) -> ssl.SSLContext:
        """The client's SSL context: test mode trusts any server; otherwise ``authServer`` verifies it
        (hostnames are not checked, as Netty's client handler does not)."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        if self.test_mode or not self.client_auth_server:
            ctx.verify_mode = ssl.CERT_NONE
        else:
            try:
                if self.client_trust_cert_path:
                    ctx.load_verify_locations(self.client_trust_cert_path)
                else:
                    ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
            except (OSError, ssl.SSLError) as exc:
                raise TlsConfigError(f"{TLS_CLIENT_TRUSTCERTPATH}={self.client_trust_cert_path}: {exc}") from None
        if not self.test_mode and self.client_cert_path:
            _load_chain(ctx, self.client_cert_path, self.client_key_path, self.client_key_password, "client")
        return ctx


def default_connection_cap() -> int:
    """A server's connection cap when none is set: what the open-file limit leaves after a reserve
    for the store's files and the other listeners."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return 4096
    if soft == resource.RLIM_INFINITY:
        return 65536
    return max(64, soft - 512)


def server_settings(props: Mapping[str, str]) -> tuple[TlsConfig, int]:
    """(TLS settings, connection cap) of a server config's keys; blocking (reads tls.config.file)."""
    tls = TlsConfig.from_properties(props)
    try:
        cap = int(props.get("serverMaxConnections", "0") or 0)
    except ValueError:
        cap = 0
    return tls, cap if cap > 0 else default_connection_cap()


def broker_client_context(tls: TlsConfig, props: Mapping[str, str]) -> ssl.SSLContext | None:
    """BrokerStartup: the broker's own connections (to the NameServers) use TLS when ``tls.enable``
    says so, else when its servers enforce TLS."""
    text = props.get(TLS_ENABLE)
    use = _bool(text, False) if text else tls.mode is TlsMode.ENFORCING
    return tls.client_context() if use else None


def _load_chain(ctx: ssl.SSLContext, cert: str, key: str | None, password: str | None, side: str) -> None:
    try:
        ctx.load_cert_chain(cert, key or None, password or None)
    except (OSError, ssl.SSLError, ValueError) as exc:
        raise TlsConfigError(f"cannot load the {side} certificate {cert} / key {key}: {exc}") from None


def _load_chain_from_memory(ctx: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    # ssl loads chains from files only: a private directory, gone once loaded
    with tempfile.TemporaryDirectory(prefix="rocketpy-tls-") as tmp:
        cert_path, key_path = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
        for path, data in ((cert_path, cert), (key_path, key)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        ctx.load_cert_chain(cert_path, key_path)


@functools.cache
def self_signed_pem() -> tuple[bytes, bytes]:
    """(certificate, key) PEM of a self-signed certificate, made once per process (Netty's
    SelfSignedCertificate: RSA 2048, CN=localhost)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=365))
        .sign(key, hashes.SHA256())
    )
    return (
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )


# -- the server side of a connection ----------------------------------------------------------


class _Replayed(trio.abc.Stream):
    """A stream whose first bytes were already read (a stream that cannot peek): they come first."""

    def __init__(self, stream: trio.abc.Stream, head: bytes) -> None:
        self.stream = stream
        self.head = head

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if self.head:
            data, self.head = self.head, b""
            await trio.lowlevel.checkpoint()
            return data
        return bytes(await self.stream.receive_some(max_bytes))

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self.stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.stream.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        await self.stream.aclose()


async def _first_byte(stream: trio.abc.Stream) -> tuple[int | None, trio.abc.Stream]:
    """The first byte the peer sends (None at end of stream), without consuming it."""
    if isinstance(stream, trio.SocketStream):
        data = await stream.socket.recv(1, socket.MSG_PEEK)
        return (data[0] if data else None), stream
    data = bytes(await stream.receive_some())
    return (data[0] if data else None), _Replayed(stream, data)


async def accept_stream(
    stream: trio.abc.Stream,
    mode: TlsMode,
    context: ssl.SSLContext | None,
    peer: str,
    *,
    wait_first_byte: float | trio.CancelScope,
) -> trio.abc.Stream | None:
    """What a server serves on an accepted stream: the stream itself (plain), a TLS stream over it,
    or None when it must be closed (the reason logged in one line). The plain stream stays the
    same object, so its socket fast path stays available.

    ``wait_first_byte`` bounds the wait for the byte that tells TLS from plain: seconds, or a scope
    the caller cancels when the wait is over. A server accepting many connections passes a scope its
    sweep cancels: trio keeps a deadline's entry until its time comes, even after the wait ended, so
    a deadline per connection leaves thousands of them scattered through the heap."""
    if mode is TlsMode.DISABLED or context is None:
        return stream  # a TLS hello then reads as an absurd frame length and is refused there
    first: int | None = None
    scope = wait_first_byte if isinstance(wait_first_byte, trio.CancelScope) else trio.move_on_after(wait_first_byte)
    try:
        with scope:
            first, stream = await _first_byte(stream)
    except (OSError, trio.BrokenResourceError, trio.ClosedResourceError):
        return None
    if first is None:
        return None  # left, or silent for the idle time
    if first != HANDSHAKE_MAGIC:
        if mode is TlsMode.ENFORCING:
            log.warning("%s: clients intend to establish an insecure connection while this server is "
                        "running in SSL enforcing mode; closed", peer)
            return None
        return stream
    tls = trio.SSLStream(stream, context, server_side=True, https_compatible=True)
    try:
        with trio.fail_after(HANDSHAKE_TIMEOUT):
            await tls.do_handshake()
    except (trio.BrokenResourceError, trio.ClosedResourceError, trio.TooSlowError, OSError) as exc:
        log.warning("TLS handshake with %s failed: %s", peer, describe_tls_error(exc))
        return None
    return tls


def describe_tls_error(exc: BaseException) -> str:
    """The SSL reason of a failed handshake (trio wraps it in BrokenResourceError)."""
    if isinstance(exc, trio.TooSlowError):
        return f"no handshake within {HANDSHAKE_TIMEOUT:.0f} s"
    cause = exc.__cause__ or exc
    if isinstance(cause, ssl.SSLError):
        return cause.reason or str(cause)
    return str(cause) or type(cause).__name__


async def connect_stream(
    stream: trio.abc.Stream, context: ssl.SSLContext, host: str
) -> trio.SSLStream[trio.abc.Stream]:
    """The client side: a TLS stream over a connected ``stream``, handshake done (the caller bounds it
    in time); a failed handshake closes ``stream`` and raises ConnectionError with the SSL reason."""
    tls = trio.SSLStream(stream, context, server_hostname=host or None, https_compatible=True)
    try:
        await tls.do_handshake()
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
        await trio.aclose_forcefully(stream)
        raise ConnectionError(f"TLS handshake failed: {describe_tls_error(exc)}") from None
    except BaseException:  # cancelled or timed out mid-handshake: the socket must not leak
        await trio.aclose_forcefully(stream)
        raise
    return tls
