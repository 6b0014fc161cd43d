"""TLS as the Java 4.9.8 servers and clients do it (TlsSystemConfig/TlsHelper), with trustme certificates:
one port serves plain and TLS (permissive), enforcing refuses plain, client auth, bad certificates, and the
servers' limits on idle and extra connections."""

from __future__ import annotations

import functools
import gc
import logging
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
import trio.testing
import trustme

from rocketpy.codecs import RemotingCommand, ResponseCode
from rocketpy.namesrv import NameServer, NamesrvConfig
from rocketpy.remoting import Dispatcher, RemotingConnectError, RemotingServer, open_remoting_client
from rocketpy.remoting.tls import TlsConfig, TlsMode, broker_client_context, server_settings
from rocketpy.testing import wait_until

ECHO = 9001


def echo_dispatcher() -> Dispatcher:
    d = Dispatcher()

    @d.route(ECHO)
    def echo(ctx, request):  # type: ignore[no-untyped-def]
        return request.response(ResponseCode.SUCCESS, body=request.body)

    return d


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def certs(ca: trustme.CA, tmp_path: Path) -> dict[str, str]:
    """PEM files: the CA, a server certificate and key, a client certificate and key."""
    server = ca.issue_cert("localhost", "127.0.0.1")
    client = ca.issue_cert("client.example")
    paths = {
        "ca": tmp_path / "ca.pem",
        "server_cert": tmp_path / "server.pem",
        "server_key": tmp_path / "server.key",
        "client_cert": tmp_path / "client.pem",
        "client_key": tmp_path / "client.key",
    }
    ca.cert_pem.write_to_path(str(paths["ca"]))
    server.cert_chain_pems[0].write_to_path(str(paths["server_cert"]))
    server.private_key_pem.write_to_path(str(paths["server_key"]))
    client.cert_chain_pems[0].write_to_path(str(paths["client_cert"]))
    client.private_key_pem.write_to_path(str(paths["client_key"]))
    return {k: str(v) for k, v in paths.items()}


def server_tls(certs: dict[str, str], mode: str = "permissive", **props: str) -> TlsConfig:
    given = {
        "tls.server.mode": mode,
        "tls.test.mode.enable": "false",
        "tls.server.certPath": certs["server_cert"],
        "tls.server.keyPath": certs["server_key"],
        "tls.config.file": "/nonexistent/tls.properties",
        **props,
    }
    return TlsConfig.from_properties(given)


def client_ssl(certs: dict[str, str], *, with_cert: bool = False, trust: str | None = None) -> ssl.SSLContext:
    props = {
        "tls.test.mode.enable": "false",
        "tls.client.authServer": "true",
        "tls.client.trustCertPath": trust or certs["ca"],
        "tls.config.file": "/nonexistent/tls.properties",
    }
    if with_cert:
        props |= {"tls.client.certPath": certs["client_cert"], "tls.client.keyPath": certs["client_key"]}
    return TlsConfig.from_properties(props).client_context()


@pytest.fixture
async def serve(nursery: trio.Nursery) -> AsyncIterator:  # type: ignore[type-arg]
    async def start(tls: TlsConfig | None, **kw: object) -> RemotingServer:
        server = RemotingServer(echo_dispatcher(), tls=tls, **kw)  # type: ignore[arg-type]
        return await nursery.start(server.serve, "127.0.0.1", 0)  # type: ignore[no-any-return]

    yield start
    nursery.cancel_scope.cancel()


async def echo(addr: str, ssl_context: ssl.SSLContext | None, body: bytes = b"hi") -> RemotingCommand:
    try:
        async with open_remoting_client(ssl_context=ssl_context) as client:
            return await client.invoke(addr, RemotingCommand(code=ECHO, body=body), timeout=10)
    except BaseExceptionGroup as group:  # the client's nursery wraps what the invoke raised
        first = group.exceptions[0]
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise first from None


async def test_permissive_serves_plain_and_tls_on_one_port(serve, certs) -> None:  # type: ignore[no-untyped-def]
    server = await serve(server_tls(certs))
    plain = await echo(server.address, None, b"plain")
    secure = await echo(server.address, client_ssl(certs), b"secure")
    assert (plain.code, plain.body) == (ResponseCode.SUCCESS, b"plain")
    assert (secure.code, secure.body) == (ResponseCode.SUCCESS, b"secure")


async def test_enforcing_refuses_plain(serve, certs, caplog) -> None:  # type: ignore[no-untyped-def]
    server = await serve(server_tls(certs, "enforcing"))
    assert (await echo(server.address, client_ssl(certs))).body == b"hi"
    with pytest.raises(Exception, match="closed|failed"):
        await echo(server.address, None)
    assert any("enforcing mode" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


async def test_disabled_refuses_tls(serve, certs) -> None:  # type: ignore[no-untyped-def]
    server = await serve(server_tls(certs, "disabled"))
    assert server.tls_context is None
    assert (await echo(server.address, None)).body == b"hi"
    with pytest.raises(RemotingConnectError, match="TLS handshake failed"):
        await echo(server.address, client_ssl(certs))


async def test_required_client_auth_refuses_a_client_without_certificate(serve, certs) -> None:  # type: ignore[no-untyped-def]
    tls = server_tls(certs, **{"tls.server.need.client.auth": "require", "tls.server.authClient": "true",
                               "tls.server.trustCertPath": certs["ca"]})
    server = await serve(tls)
    assert (await echo(server.address, client_ssl(certs, with_cert=True))).body == b"hi"
    with pytest.raises(Exception):  # noqa: B017 - refused at handshake or at the first read, per TLS version
        await echo(server.address, client_ssl(certs, with_cert=False))


async def test_bad_server_certificate_fails_with_one_clear_line(serve, certs, tmp_path) -> None:  # type: ignore[no-untyped-def]
    server = await serve(server_tls(certs))
    other = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other))
    with pytest.raises(RemotingConnectError) as info:
        await echo(server.address, client_ssl(certs, trust=str(other)))
    text = str(info.value)
    assert "\n" not in text and "TLS handshake failed" in text and "CERTIFICATE_VERIFY_FAILED" in text


def test_unreadable_server_key_is_a_clear_error(certs) -> None:  # type: ignore[no-untyped-def]
    tls = server_tls(certs, **{"tls.server.keyPath": "/nonexistent/key.pem"})
    with pytest.raises(Exception, match="cannot load the server certificate"):
        tls.server_context()


def test_config_file_overrides_all_but_mode_and_enable(tmp_path: Path) -> None:
    conf = tmp_path / "tls.properties"
    conf.write_text("tls.server.mode=enforcing\ntls.enable=true\ntls.test.mode.enable=false\n"
                    "tls.server.need.client.auth=require\ntls.client.authServer=true\n")
    cfg = TlsConfig.from_properties({"tls.config.file": str(conf), "tls.server.need.client.auth": "none"})
    assert cfg.mode is TlsMode.PERMISSIVE and not cfg.enable  # as TlsHelper: the file never sets those two
    assert (cfg.test_mode, cfg.server_need_client_auth, cfg.client_auth_server) == (False, "require", True)
    assert TlsMode.parse("Enforcing") is TlsMode.PERMISSIVE  # TlsMode.parse compares exactly


def test_broker_to_namesrv_tls_follows_tls_enable_else_enforcing() -> None:
    permissive = TlsConfig()
    assert broker_client_context(permissive, {}) is None
    assert broker_client_context(permissive, {"tls.enable": "true"}) is not None
    assert broker_client_context(TlsConfig(mode=TlsMode.ENFORCING), {}) is not None
    assert broker_client_context(TlsConfig(mode=TlsMode.ENFORCING), {"tls.enable": "false"}) is None


async def test_namesrv_with_no_tls_settings_accepts_tls_and_plain(tmp_path: Path, nursery: trio.Nursery) -> None:
    # Java's defaults: permissive, test mode (a self-signed certificate made at start)
    config = NamesrvConfig(listen_port=0, kv_config_path=str(tmp_path / "kv.json"),
                           config_store_path=str(tmp_path / "ns.properties"))
    config.extra["tls.config.file"] = str(tmp_path / "none.properties")
    ns: NameServer = await nursery.start(NameServer(config).run)
    test_mode_client = TlsConfig(enable=True).client_context()
    for ctx in (None, test_mode_client):
        async with open_remoting_client(ssl_context=ctx) as client:
            answer = await client.invoke(ns.address, RemotingCommand(code=106), timeout=10)  # GET_BROKER_CLUSTER_INFO
            assert answer.code == ResponseCode.SUCCESS
    nursery.cancel_scope.cancel()


# -- limits: a silent peer, idle connections, the connection cap ---------------------------


async def test_silent_peer_is_closed_after_the_idle_time(virtual_clock: trio.testing.MockClock) -> None:
    # permissive detection waits for a first byte no longer than serverChannelMaxIdleTimeSeconds
    server = RemotingServer(echo_dispatcher(), tls=TlsConfig(), idle_timeout=120)
    server.tls_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ours, theirs = trio.testing.memory_stream_pair()
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.close_idle_connections)  # serve() runs it: it ends the wait
        nursery.start_soon(server.handle_stream, ours, "peer:1")
        with trio.fail_after(300):
            assert await theirs.receive_some() == b""
        assert 120 <= trio.current_time() - start <= 125
        nursery.cancel_scope.cancel()


async def test_detection_leaves_no_timer_behind() -> None:
    # a deadline per accepted connection would stay in trio's deadline heap for the whole idle time
    # after its first byte came: tens of thousands of connections a minute kept that many scopes alive,
    # scattered through the heap (the fuzzer's memory runs)
    server = RemotingServer(echo_dispatcher(), tls=TlsConfig(), idle_timeout=120)
    server.tls_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ours, theirs = trio.testing.memory_stream_pair()
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.handle_stream, ours, "peer:1")
        await theirs.send_all(RemotingCommand(code=ECHO, opaque=5, body=b"x").encode())
        with trio.fail_after(10):
            assert await theirs.receive_some()  # detected as plain and served
        idle_bound = [o for o in gc.get_objects()
                      if isinstance(o, trio.CancelScope) and start + 119 <= o.deadline <= trio.current_time() + 121]
        assert idle_bound == []
        await theirs.aclose()


class _SlowAfterFirstByte(trio.abc.Stream):
    """A client's side whose first byte goes at once and the rest ``delay`` seconds later."""

    def __init__(self, stream: trio.abc.Stream, delay: float) -> None:
        self.stream, self.delay, self.sent = stream, delay, False

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        if not self.sent and len(data) > 1:
            self.sent = True
            await self.stream.send_all(data[:1])
            await trio.sleep(self.delay)
            data = data[1:]
        await self.stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.stream.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        return bytes(await self.stream.receive_some(max_bytes))

    async def aclose(self) -> None:
        await self.stream.aclose()


async def test_streams_waiting_for_a_first_byte_count_toward_the_cap(virtual_clock: trio.testing.MockClock,
                                                                      ca: trustme.CA) -> None:
    # a silent peer holds its place under the cap until the sweep ends its wait; a TLS peer whose first byte
    # came before the sweep and whose handshake is still going when it runs is served: the sweep's cancel
    # lands on a scope already left
    server = RemotingServer(echo_dispatcher(), tls=TlsConfig(), idle_timeout=120, max_connections=2)
    server.tls_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost").configure_cert(server.tls_context)
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)
    silent, silent_peer = trio.testing.memory_stream_pair()
    late, late_peer = trio.testing.memory_stream_pair()
    refused, refused_peer = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.close_idle_connections)
        nursery.start_soon(server.handle_stream, silent, "peer:1")
        nursery.start_soon(server.handle_stream, late, "peer:2")
        await wait_until(lambda: len(server._accepting) == 2)
        nursery.start_soon(server.handle_stream, refused, "peer:3")
        with trio.fail_after(5):
            assert await refused_peer.receive_some() == b""  # two waiting: the cap is reached
        await trio.sleep(119.9 - trio.current_time())
        client = trio.SSLStream(_SlowAfterFirstByte(late_peer, 1.0), client_context, server_hostname="localhost")
        nursery.start_soon(client.do_handshake)
        with trio.fail_after(10):
            assert await silent_peer.receive_some() == b""  # its wait ended by the sweep (at 120 s)
        (waiting,) = server._accepting  # the TLS peer's: detected, its handshake waits for the rest of its hello
        assert waiting.cancel_called and trio.current_time() < 120.9
        with trio.fail_after(10):
            await client.send_all(RemotingCommand(code=ECHO, opaque=5, body=b"x").encode())
            assert await client.receive_some()  # served over TLS
        assert server._accepting == {} and server.tls_accepted == 1 and len(server.connections) == 1
        nursery.cancel_scope.cancel()


async def test_plain_peer_is_served_after_detection_in_memory() -> None:
    server = RemotingServer(echo_dispatcher(), tls=TlsConfig(), idle_timeout=120)
    server.tls_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ours, theirs = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.handle_stream, ours, "peer:1")
        await theirs.send_all(RemotingCommand(code=ECHO, opaque=5, body=b"x").encode())
        with trio.fail_after(10):
            data = await theirs.receive_some()
        answer = RemotingCommand.decode(data)
        assert (answer.opaque, answer.body) == (5, b"x")
        await theirs.aclose()


async def test_idle_connection_closed_after_max_idle_time(virtual_clock: trio.testing.MockClock) -> None:
    server = RemotingServer(echo_dispatcher(), idle_timeout=120)
    ours, theirs = trio.testing.memory_stream_pair()
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.close_idle_connections)
        nursery.start_soon(server.handle_stream, ours, "peer:1")
        await theirs.send_all(RemotingCommand(code=ECHO, opaque=5, body=b"x").encode())
        await theirs.receive_some()  # answered: active now
        answered = trio.current_time()
        with trio.fail_after(300):
            while await theirs.receive_some():
                pass
        assert 120 <= trio.current_time() - answered <= 120 + 30 + 1
        assert trio.current_time() - start >= 120
        nursery.cancel_scope.cancel()


async def test_connection_cap_refuses_with_one_log_line(serve, caplog) -> None:  # type: ignore[no-untyped-def]
    server = await serve(None, max_connections=2)
    held = []
    for _ in range(2):
        stream = await trio.open_tcp_stream("127.0.0.1", server.port)
        await stream.send_all(RemotingCommand(code=ECHO, opaque=1).encode())
        assert await stream.receive_some()
        held.append(stream)
    for _ in range(3):
        extra = await trio.open_tcp_stream("127.0.0.1", server.port)
        with trio.fail_after(5):
            try:
                assert await extra.receive_some() == b""
            except trio.BrokenResourceError:
                pass
        await extra.aclose()
    lines = [r for r in caplog.records if "connection cap of 2 reached" in r.getMessage()]
    assert len(lines) == 1
    for stream in held:
        await stream.aclose()


def test_server_settings_read_the_cap_and_default_from_the_fd_limit() -> None:
    _, cap = server_settings({"serverMaxConnections": "10", "tls.config.file": "/nonexistent"})
    assert cap == 10
    _, default = server_settings({"tls.config.file": "/nonexistent"})
    assert default >= 64


async def test_proxy_decodes_tls_both_sides(serve, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from rocketpy.sniffer.proxy import serve_proxy
    from rocketpy.sniffer.reassembly import CapturedFrame

    no_file = {"tls.config.file": str(tmp_path / "none")}
    server = await serve(TlsConfig.from_properties({**no_file, "tls.server.mode": "enforcing"}))
    events: list = []
    async with trio.open_nursery() as nursery:
        proxy_tls = TlsConfig.from_properties(no_file)
        listeners = await nursery.start(
            functools.partial(serve_proxy, tls=proxy_tls), ("127.0.0.1", 0), ("127.0.0.1", server.port), events.append
        )
        addr = f"127.0.0.1:{listeners[0].socket.getsockname()[1]}"
        test_mode_client = TlsConfig(enable=True).client_context()
        assert (await echo(addr, test_mode_client, b"through")).body == b"through"
        nursery.cancel_scope.cancel()
    frames = [e for e in events if isinstance(e, CapturedFrame)]
    assert [(f.from_server, f.command.code, f.command.body) for f in frames] == [
        (False, ECHO, b"through"),
        (True, ResponseCode.SUCCESS, b"through"),
    ]


async def test_enforcing_cluster_produce_and_pull_over_tls(tmp_path: Path, nursery: trio.Nursery) -> None:
    # NameServer and broker both enforcing: the broker registers over TLS (BrokerStartup's rule),
    # our producer finds the route and sends over TLS, a plain client is refused
    from rocketpy.client import ClientConfig, Producer
    from rocketpy.client.message import make_message
    from rocketpy.testing import BrokerTestClient, running_broker

    no_file = str(tmp_path / "none.properties")
    config = NamesrvConfig(listen_port=0, kv_config_path=str(tmp_path / "kv.json"),
                           config_store_path=str(tmp_path / "ns.properties"))
    config.extra.update({"tls.server.mode": "enforcing", "tls.config.file": no_file})
    ns: NameServer = await nursery.start(NameServer(config).run)
    tls_props = {"tls.server.mode": "enforcing", "tls.config.file": no_file, "namesrvAddr": ns.address}
    async with running_broker(str(tmp_path / "store"), **tls_props) as broker:
        await wait_until(lambda: "broker-a" in ns.routes.broker_addr_table)
        client_config = ClientConfig(namesrv_addr=ns.address, use_tls=True)
        async with Producer("PG-tls", config=client_config) as producer:
            result = await producer.send(make_message("TopicTls", "secret"))
        ctx = TlsConfig(enable=True).client_context()
        async with open_remoting_client(ssl_context=ctx) as rc:
            _, msgs = await BrokerTestClient(rc, broker.servers[0].address).pull(
                "G-tls", "TopicTls", result.message_queue.queue_id, 0)
        assert [m.body for m in msgs] == [b"secret"]
        with pytest.raises(Exception, match="closed|failed"):
            await echo(broker.servers[0].address, None)
    nursery.cancel_scope.cancel()


async def test_enforcing_master_and_slave_replicate_over_tls(tmp_path: Path, caplog) -> None:  # type: ignore[no-untyped-def]
    from contextlib import AsyncExitStack

    from rocketpy.testing import BrokerTestClient, free_broker_port, running_broker

    tls = {"tls.server.mode": "enforcing", "tls.config.file": str(tmp_path / "none"),
           "haSendHeartbeatInterval": "200"}
    port = free_broker_port()
    async with AsyncExitStack() as stack:
        master = await stack.enter_async_context(
            running_broker(str(tmp_path / "m"), brokerRole="ASYNC_MASTER", listenPort=port, **tls))
        slave = await stack.enter_async_context(running_broker(
            str(tmp_path / "s"), brokerRole="SLAVE", brokerId="1", haMasterAddress=f"127.0.0.1:{port + 1}", **tls))
        ctx = TlsConfig(enable=True).client_context()
        async with open_remoting_client(ssl_context=ctx) as rc:
            c = BrokerTestClient(rc, master.servers[0].address)
            for i in range(5):
                assert (await c.send("THaTls", b"m%d" % i)).code == ResponseCode.SUCCESS
        end = master.store.max_phy_offset
        await wait_until(lambda: slave.store.max_phy_offset == end, timeout=20, tick=0.05)
        assert slave.ha.client.ssl_context is not None and master.ha.service.tls_context is not None
        # a plain peer on the enforcing HA port is refused with a line
        plain = await trio.open_tcp_stream("127.0.0.1", port + 1)
        await plain.send_all(b"\x00" * 8)
        with trio.fail_after(10):
            try:
                assert await plain.receive_some() == b""
            except trio.BrokenResourceError:
                pass
        await plain.aclose()
        assert any("enforcing mode" in r.getMessage() for r in caplog.records)


def test_serve_config_gives_the_tls_keys_to_both_servers(tmp_path: Path) -> None:
    import argparse

    from rocketpy.broker.cli import serve_configs

    conf = tmp_path / "serve.conf"
    conf.write_text("tls.server.mode=enforcing\ntls.test.mode.enable=true\n")
    args = argparse.Namespace(host="127.0.0.1", namesrv_port=9876, broker_port=10911, store=str(tmp_path / "s"),
                              config=str(conf), no_vip=True)
    ns, broker = serve_configs(args)
    assert ns.extra["tls.server.mode"] == broker.props["tls.server.mode"] == "enforcing"
    assert server_settings(ns.extra)[0].mode is TlsMode.ENFORCING


def test_cli_tls_flag_speaks_tls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    import io
    import sys

    from clusters import threaded_cluster

    from rocketpy.cli import main

    with threaded_cluster() as c:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"over tls\n")))
        no_file = str(tmp_path / "none.properties")
        assert main(["produce", "-n", c.namesrv, "-t", "CliTls", "--tls", "--tls-config", no_file]) == 0
        assert "SEND_OK" in capsys.readouterr().out
        assert sum(s.tls_accepted for s in c.broker.servers) > 0
        assert main(["admin", "clusterList", "-n", c.namesrv, "--tls", "--tls-config", no_file]) == 0
        assert "broker-a" in capsys.readouterr().out


async def test_permissive_test_mode_without_cryptography_serves_plain(
    serve, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:  # type: ignore[no-untyped-def]
    from rocketpy.remoting import tls as tls_module

    def missing() -> tuple[bytes, bytes]:
        raise ImportError("No module named 'cryptography'")

    monkeypatch.setattr(tls_module, "self_signed_pem", missing)
    server = await serve(TlsConfig())
    assert server.tls_context is None
    assert (await echo(server.address, None)).body == b"hi"
    assert any("TLS off" in r.getMessage() and "cryptography" in r.getMessage() for r in caplog.records)


def test_server_command_with_unusable_tls_keys_fails_in_one_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    conf = tmp_path / "namesrv.conf"
    conf.write_text(f"listenPort=0\ntls.test.mode.enable=false\ntls.server.certPath={tmp_path}/c.pem\n"
                    f"tls.server.keyPath={tmp_path}/k.pem\ntls.config.file={tmp_path}/none\n"
                    f"kvConfigPath={tmp_path}/kv.json\n")
    result = subprocess.run([sys.executable, "-m", "rocketpy", "namesrv", "-c", str(conf)], capture_output=True,
                            text=True, timeout=30)
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "TLS settings: cannot load the server certificate" in lines[0], result.stderr
