"""Master/slave CommitLog replication, wire-compatible with RocketMQ 4.9.8's HAService.

The stream itself (offset reports one way, transfers the other) is :mod:`rocketpy.codecs.ha`.
This module runs it on trio:

* :class:`HAService` (the master): listens on ``haListenPort``; one :class:`HAConnection`
  per slave, a task reading its reports and a task streaming CommitLog bytes to it. It
  tracks the highest offset any slave acknowledged (``push2SlaveMaxOffset``) and lets
  SYNC_MASTER sends wait for it (:meth:`HAService.wait_transfer`, Java's GroupTransferService).
* :class:`HAClient` (the slave): connects to the master's HA address, reports its max
  CommitLog offset every ``haSendHeartbeatInterval`` and after each append, appends what it
  receives through :meth:`MessageStore.append_to_commit_log` (which builds the ConsumeQueue
  and IndexFile), and reconnects every 5 s when the master is unreachable.

Behaviours kept from Java: the master sends nothing before the slave's first report; a first
report of 0 starts the stream at the beginning of the master's last CommitLog file; a transfer
is at most ``haTransferBatchSize`` bytes and never crosses a mapped file; an idle side writes
again (heartbeat transfer / repeated report) ``haSendHeartbeatInterval`` after its last write;
the master drops a connection silent for ``haHousekeepingInterval``; a slave whose offset does
not match a transfer's closes the connection; the slave's first report comes one heartbeat
interval after connecting.

The slave appends with ``CommitLog.append_data`` and dispatches with :func:`dispatch_complete_records`
rather than ``MessageStore.append_to_commit_log``: a 32 KiB transfer usually ends inside a record,
and that record must wait for the next transfer instead of being reported as corrupt.
"""

from __future__ import annotations

import bisect
import itertools
import logging
import ssl
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import trio

from ..codecs.errors import CodecError
from ..codecs.ha import (
    HaOffsetReader,
    HaTransferReader,
    build_offset_report,
    build_transfer_header,
)
from ..codecs.message import BLANK_MAGIC_CODE, MESSAGE_MAGIC_CODE, peek_size_magic
from ..remoting.tls import HANDSHAKE_TIMEOUT, TlsMode, accept_stream, connect_stream
from .types import PutMessageStatus

if TYPE_CHECKING:
    from .message_store import MessageStore

__all__ = ["HAClient", "HAConnection", "HAService", "read_commit_log_batch", "split_host_port"]

log = logging.getLogger("rocketpy.store.ha")

#: a copy larger than this runs in a worker thread instead of on the event loop
_THREAD_COPY_THRESHOLD = 1024 * 1024
#: the slave retries an unreachable master this often (HAClient.waitForRunning(5000))
RECONNECT_INTERVAL = 5.0
#: a session the master ends sooner than this counts as a refused connection (the slave waits before the next)
SESSION_REFUSED_WITHIN = 1.0
#: seconds an accepted HA peer has to send its first byte when TLS is on (Java's haHousekeepingInterval)
HA_FIRST_BYTE_WAIT = 20.0


def split_host_port(addr: str) -> tuple[str, int]:
    host, _, port = addr.rpartition(":")
    return host, int(port)


def read_commit_log_batch(store: MessageStore, offset: int, max_size: int) -> bytes | None:
    """At most ``max_size`` CommitLog bytes from ``offset``, never crossing a mapped file
    (getCommitLogData then the batch cap); None when nothing is readable there yet."""
    commitlog = store.commitlog
    mf = commitlog.mfq.find_by_offset(offset, offset == 0)
    if mf is None:
        return None
    pos = offset - mf.file_from_offset
    if pos < 0:
        return None
    size = min(mf.read_position - pos, max_size)
    if size <= 0:
        return None
    return mf.read(pos, size)


def dispatch_complete_records(store: MessageStore, from_offset: int) -> int:
    """Dispatch (ConsumeQueue, IndexFile) every whole record from ``from_offset`` to the CommitLog
    end and return where the next one starts: a record the master has sent only part of waits for
    the rest (a slave's ReputMessageService does not skip it). A record that does not parse is
    logged and the walk moves on to the next file, as the store's own reput does."""
    commitlog = store.commitlog
    offset = from_offset
    while offset < commitlog.max_offset:
        mf = commitlog.mfq.find_by_offset(offset)
        if mf is None:
            break
        base = mf.file_from_offset
        pos = offset - base
        limit = mf.read_position
        buf = mf.mm
        while pos < limit:
            if limit - pos < 8:
                return base + pos
            size, magic = peek_size_magic(buf, pos)
            if magic == BLANK_MAGIC_CODE:
                if pos + 8 > limit:
                    return base + pos
                pos = limit = -1
                break
            if magic != MESSAGE_MAGIC_CODE or size <= 0:
                log.error("replicated bytes at CommitLog offset %d are not a record", base + pos)
                pos = limit = -1
                break
            if pos + size > limit:
                return base + pos
            n, msg = commitlog.check_message(buf, pos, False)
            if n <= 0 or msg is None:
                log.error("replicated record at CommitLog offset %d does not parse", base + pos)
                pos = limit = -1
                break
            store.do_dispatch(commitlog.dispatch_request(msg))
            pos += n
        if pos < 0:  # a blank (end of file) or a bad record: on to the next file
            offset = commitlog.roll_next_file(base)
            if offset > commitlog.max_offset:
                return commitlog.max_offset
            continue
        offset = base + pos
        if pos < mf.file_size:
            break
    return offset


class HAConnection:
    """The master's side of one slave connection (HAConnection: ReadSocketService + WriteSocketService)."""

    def __init__(self, service: HAService, stream: trio.abc.Stream, client_addr: str) -> None:
        self.service = service
        self.stream = stream
        self.client_addr = client_addr
        self.slave_request_offset = -1
        self.slave_ack_offset = -1
        self.next_transfer_from_where = -1
        self._requested = trio.Event()
        self._cancel = trio.CancelScope()

    def close(self) -> None:
        self._cancel.cancel()

    async def run(self) -> None:
        try:
            with self._cancel:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._read_loop, nursery.cancel_scope)
                    nursery.start_soon(self._write_loop, nursery.cancel_scope)
        finally:
            with trio.CancelScope(shield=True):
                await trio.aclose_forcefully(self.stream)

    # -- slave -> master: offset reports --------------------------------------------------
    async def _read_loop(self, done: trio.CancelScope) -> None:
        cfg = self.service.store.config
        reader = HaOffsetReader()
        try:
            while True:
                with trio.move_on_after(cfg.ha_housekeeping_interval / 1000) as idle:
                    data = await self.stream.receive_some(64 * 1024)
                if idle.cancelled_caught:
                    log.warning("ha housekeeping, found this connection[%s] expired", self.client_addr)
                    return
                if not data:
                    log.info("HA connection from slave %s closed by the slave", self.client_addr)
                    return
                reports = reader.feed(data)
                if not reports:
                    continue
                if not self.on_report(reports[-1]):
                    return
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            log.info("HA connection from slave %s lost: %s", self.client_addr, exc)
        finally:
            done.cancel()

    def on_report(self, offset: int) -> bool:
        """One offset report (the newest of a read); False closes the connection."""
        store = self.service.store
        self.slave_ack_offset = offset
        if self.slave_request_offset < 0 and offset < 0:
            log.warning("slave[%s] reported a negative offset %d, closing", self.client_addr, offset)
            return False
        if offset > store.max_phy_offset:
            # not a slave of this CommitLog (or not a slave at all): Java would stream heartbeats
            # forever; we close, and a real slave ahead of us retries every heartbeat interval
            log.warning(
                "slave[%s] request offset=%d greater than local commitLog offset=%d, closing",
                self.client_addr,
                offset,
                store.max_phy_offset,
            )
            return False
        if self.slave_request_offset < 0:
            self.slave_request_offset = offset
            log.info("slave[%s] request offset %d", self.client_addr, offset)
            self._requested.set()
        self.service.notify_transfer_some(offset)
        return True

    # -- master -> slave: transfers ---------------------------------------------------------
    def _first_transfer_offset(self) -> int:
        store = self.service.store
        if self.slave_request_offset == 0:
            # a new slave: start at the beginning of the last CommitLog file
            max_offset = store.commitlog.max_offset
            return max(0, max_offset - max_offset % store.config.mapped_file_size_commit_log)
        return self.slave_request_offset

    async def _send(self, data: bytes) -> bool:
        cfg = self.service.store.config
        with trio.move_on_after(cfg.ha_housekeeping_interval / 1000) as stuck:
            await self.stream.send_all(data)
        if stuck.cancelled_caught:
            log.warning("slave[%s] has not read for %d ms, closing", self.client_addr, cfg.ha_housekeeping_interval)
            return False
        return True

    async def _write_loop(self, done: trio.CancelScope) -> None:
        service = self.service
        store = service.store
        cfg = store.config
        heartbeat = cfg.ha_send_heartbeat_interval / 1000
        last_write = trio.current_time()
        try:
            await self._requested.wait()
            self.next_transfer_from_where = self._first_transfer_offset()
            log.info(
                "master transfer data from %d to slave[%s], and slave request %d",
                self.next_transfer_from_where,
                self.client_addr,
                self.slave_request_offset,
            )
            while True:
                if trio.current_time() - last_write > heartbeat:
                    if not await self._send(build_transfer_header(self.next_transfer_from_where, 0)):
                        return
                    last_write = trio.current_time()
                wake = service.data_event
                batch = cfg.ha_transfer_batch_size
                offset = self.next_transfer_from_where
                if batch > _THREAD_COPY_THRESHOLD:
                    data = await trio.to_thread.run_sync(read_commit_log_batch, store, offset, batch)
                else:
                    data = read_commit_log_batch(store, offset, batch)
                if data:
                    self.next_transfer_from_where = offset + len(data)
                    if not await self._send(build_transfer_header(offset, len(data)) + data):
                        return
                    last_write = trio.current_time()
                    continue
                # nothing new: sleep until a put wakes us or the heartbeat is due
                with trio.move_on_at(last_write + heartbeat + 0.001):
                    await wake.wait()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            log.info("HA connection to slave %s lost: %s", self.client_addr, exc)
        finally:
            done.cancel()


class HAService:
    """The master's HA side: slave connections, their acknowledged offset, SYNC_MASTER waits."""

    def __init__(self, store: MessageStore) -> None:
        self.store = store
        self.connections: set[HAConnection] = set()
        self.push2slave_max_offset = 0
        self.port: int | None = None
        self.data_event = trio.Event()
        self._waiters: list[tuple[int, int, trio.Event]] = []  # sorted (offset, seq, event)
        self._seq = itertools.count()
        #: TLS on the HA port: the broker sets these when it enforces TLS (Java's HA port is always plain, and
        #: so is ours otherwise, so that a Java slave, or a silent peer counted as a slave, is served as by Java)
        self.tls_mode = TlsMode.DISABLED
        self.tls_context: ssl.SSLContext | None = None
        #: who may connect: ``await allow(host)`` before anything is read or sent (the broker's haAllowedAddresses;
        #: it logs a refusal); None: anyone, as Java's HAService
        self.allow: Callable[[str], Awaitable[bool]] | None = None

    # -- state -------------------------------------------------------------------------------
    @property
    def connection_count(self) -> int:
        return len(self.connections)

    def is_slave_ok(self, master_put_where: int) -> bool:
        """A slave is connected and less than haSlaveFallbehindMax behind ``master_put_where``."""
        return (
            bool(self.connections)
            and master_put_where - self.push2slave_max_offset < self.store.config.ha_slave_fallbehind_max
        )

    def notify_new_data(self) -> None:
        """New CommitLog bytes: wake the transfer tasks (Java's WaitNotifyObject.wakeupAll)."""
        if self.connections:
            self.data_event.set()
            self.data_event = trio.Event()

    def notify_transfer_some(self, offset: int) -> None:
        if offset <= self.push2slave_max_offset:
            return
        self.push2slave_max_offset = offset
        waiters = self._waiters
        n = bisect.bisect_right(waiters, (offset, float("inf")))
        if n:
            for _, _, ev in waiters[:n]:
                ev.set()
            del waiters[:n]

    async def wait_transfer(self, next_offset: int, timeout: float | None = None) -> PutMessageStatus:
        """PUT_OK once a slave acknowledged ``next_offset``, FLUSH_SLAVE_TIMEOUT after ``timeout``
        seconds (slaveTimeout by default): GroupTransferService."""
        if self.push2slave_max_offset >= next_offset:
            return PutMessageStatus.PUT_OK
        if timeout is None:
            timeout = self.store.config.slave_timeout / 1000
        ev = trio.Event()
        entry = (next_offset, next(self._seq), ev)
        bisect.insort(self._waiters, entry)
        self.notify_new_data()
        with trio.move_on_after(timeout):
            await ev.wait()
        if ev.is_set():
            return PutMessageStatus.PUT_OK
        try:
            self._waiters.remove(entry)
        except ValueError:
            pass
        if self.push2slave_max_offset >= next_offset:
            return PutMessageStatus.PUT_OK
        return PutMessageStatus.FLUSH_SLAVE_TIMEOUT

    async def submit_replica(self, wrote_offset: int, wrote_bytes: int) -> PutMessageStatus:
        """CommitLog.submitReplicaRequest for a SYNC_MASTER message that waits for the store."""
        end = wrote_offset + wrote_bytes
        if not self.is_slave_ok(end):
            return PutMessageStatus.SLAVE_NOT_AVAILABLE
        return await self.wait_transfer(end)

    # -- serving -------------------------------------------------------------------------------
    async def serve(
        self, host: str, port: int, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED
    ) -> None:
        listeners = await trio.open_tcp_listeners(port, host=host)
        self.port = listeners[0].socket.getsockname()[1]
        log.info("HAService listening on %s:%d", host, self.port)
        try:
            async with trio.open_nursery() as nursery:
                task_status.started(self.port)
                await trio.serve_listeners(self._handle, listeners, handler_nursery=nursery)
        finally:
            for conn in list(self.connections):
                conn.close()

    async def _handle(self, stream: trio.SocketStream) -> None:
        try:
            peer = stream.socket.getpeername()
            addr = f"{peer[0]}:{peer[1]}"
        except OSError:
            addr = "?"
        if self.allow is not None and not await self.allow(addr.rsplit(":", 1)[0]):
            await trio.aclose_forcefully(stream)
            return
        log.info("HAService receive new connection, %s", addr)
        if self.tls_context is not None:
            # a slave's first bytes are its 8-byte offset (0x00...), never a TLS record
            served = await accept_stream(
                stream, self.tls_mode, self.tls_context, addr, wait_first_byte=HA_FIRST_BYTE_WAIT
            )
            if served is None:
                await trio.aclose_forcefully(stream)
                return
            await self.run_connection(served, addr)
            return
        await self.run_connection(stream, addr)

    async def run_connection(self, stream: trio.abc.Stream, addr: str) -> None:
        conn = HAConnection(self, stream, addr)
        self.connections.add(conn)
        try:
            await conn.run()
        except Exception:
            # one broken connection must not take the broker down (Java ends that connection's threads)
            log.exception("HA connection from slave %s failed", addr)
        finally:
            self.connections.discard(conn)


class HAClient:
    """The slave's side (HAService.HAClient): one connection to the master at a time."""

    def __init__(self, store: MessageStore, *, on_append: Callable[[], None] | None = None) -> None:
        self.store = store
        self.master_address: str | None = None
        self.on_append = on_append
        self.connected = False
        self.current_reported_offset = 0
        self.reput_offset = -1  # next CommitLog byte to dispatch (slave side)
        self._address_changed = trio.Event()
        self.sessions = 0  # connections made, for tests and logs
        #: the last append failed for want of disk space: wait before asking the master again
        self.append_failing = False
        #: TLS to the master (set by a broker whose servers enforce TLS: its master's HA port does too)
        self.ssl_context: ssl.SSLContext | None = None

    def update_master_address(self, addr: str | None) -> None:
        if addr and addr != self.master_address:
            log.info("update master address, OLD: %s NEW: %s", self.master_address, addr)
            self.master_address = addr
            self._address_changed.set()
            self._address_changed = trio.Event()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            addr = self.master_address
            if not addr:
                with trio.move_on_after(RECONNECT_INTERVAL):
                    await self._address_changed.wait()
                continue
            try:
                host, port = split_host_port(addr)
                stream: trio.abc.Stream = await trio.open_tcp_stream(host, port)
                if self.ssl_context is not None:
                    with trio.fail_after(HANDSHAKE_TIMEOUT):
                        stream = await connect_stream(stream, self.ssl_context, host)
            except (OSError, ValueError, trio.TooSlowError) as exc:
                log.info("connect to master %s failed: %s", addr, exc)
                with trio.move_on_after(RECONNECT_INTERVAL):
                    await self._address_changed.wait()
                continue
            started = trio.current_time()
            try:
                await self.run_session(stream)
            except Exception:
                log.exception("HAClient session with %s failed", addr)
                with trio.move_on_after(RECONNECT_INTERVAL):
                    await self._address_changed.wait()
            finally:
                with trio.CancelScope(shield=True):
                    await trio.aclose_forcefully(stream)
            if trio.current_time() - started < SESSION_REFUSED_WITHIN:
                # closed at once (a master whose haAllowedAddresses leaves us out): retry as after a refused
                # connect, not in a loop
                with trio.move_on_after(RECONNECT_INTERVAL):
                    await self._address_changed.wait()
            elif self.append_failing:
                # the master resends from our offset on the next connection: once there is room
                with trio.move_on_after(RECONNECT_INTERVAL):
                    await self._address_changed.wait()

    async def run_session(self, stream: trio.abc.Stream) -> None:
        """One connection, until it fails: report, receive, append, report again."""
        store = self.store
        cfg = store.config
        heartbeat = cfg.ha_send_heartbeat_interval / 1000
        housekeeping = cfg.ha_housekeeping_interval / 1000
        reader = HaTransferReader()
        self.sessions += 1
        self.connected = True
        self.current_reported_offset = store.max_phy_offset
        last_write = trio.current_time()

        async def report(offset: int) -> bool:
            nonlocal last_write
            with trio.move_on_after(housekeeping) as stuck:
                await stream.send_all(build_offset_report(offset))
            if stuck.cancelled_caught:
                log.warning("master %s does not read our reports, closing", self.master_address)
                return False
            last_write = trio.current_time()
            return True

        async def report_plus() -> bool:
            current = store.max_phy_offset
            if current > self.current_reported_offset:
                self.current_reported_offset = current
                return await report(current)
            return True

        try:
            while True:
                if trio.current_time() - last_write > heartbeat:
                    if not await report(self.current_reported_offset):
                        return
                data = None
                with trio.move_on_at(last_write + heartbeat + 0.001):
                    data = await stream.receive_some(1024 * 1024)
                if data is not None:
                    if not data:
                        log.info("master %s closed the HA connection", self.master_address)
                        return
                    if not await self._on_data(reader, data, report_plus):
                        return
                if not await report_plus():
                    return
                if trio.current_time() - last_write > housekeeping:
                    log.warning("HAClient, housekeeping, found this connection[%s] expired", self.master_address)
                    return
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            log.info("HA connection to master %s lost: %s", self.master_address, exc)
        finally:
            self.connected = False

    def append(self, offset: int, data: bytes) -> bool:
        """appendToCommitLog: the bytes unchanged, then dispatch the records they complete."""
        store = self.store
        if not store.is_open:
            return False
        if self.reput_offset < 0 or store.max_phy_offset == 0:
            self.reput_offset = max(store.max_phy_offset, offset) if store.max_phy_offset else offset
        try:
            if not store.commitlog.append_data(offset, data):
                return False
        except OSError as exc:
            # nothing was written: stop here, retry from the same offset when space is back
            if not self.append_failing:
                log.error(
                    "slave cannot append replicated CommitLog bytes at offset %d: %s; retrying every %g s",
                    offset,
                    exc.strerror or exc,
                    RECONNECT_INTERVAL,
                )
            self.append_failing = True
            return False
        if self.append_failing:
            log.info("slave appends replicated CommitLog bytes again from offset %d", offset)
            self.append_failing = False
        self.reput_offset = dispatch_complete_records(store, self.reput_offset)
        return True

    async def _on_data(
        self, reader: HaTransferReader, data: bytes | bytearray, report_plus: Callable[[], Awaitable[bool]]
    ) -> bool:
        """Append every complete transfer of ``data``; False closes the connection."""
        store = self.store
        try:
            transfers = reader.feed(data)
        except CodecError as exc:
            log.warning("bad HA stream from master %s: %s", self.master_address, exc)
            return False
        for t in transfers:
            slave_offset = store.max_phy_offset
            if slave_offset != 0 and slave_offset != t.phy_offset:
                log.error(
                    "master pushed offset not equal the max phy offset of slave, SLAVE: %d MASTER: %d",
                    slave_offset,
                    t.phy_offset,
                )
                return False
            if t.data:
                if not self.append(t.phy_offset, t.data):
                    if not self.append_failing:
                        log.error("appending %d replicated bytes at %d failed", len(t.data), t.phy_offset)
                    return False
                if self.on_append is not None:
                    self.on_append()
                if not await report_plus():
                    return False
        return True
