"""A recording TCP proxy: what a real client and our server said to each other, frame by frame.

Bytes are forwarded untouched; each direction is also split into frames and decoded
with rocketpy's codecs, so a test can assert on the versions a client sent and on the
exact bytes our server answered.
"""

from __future__ import annotations

import dataclasses
import functools

import trio

from rocketpy.codecs import CodecError, FrameSplitter, RemotingCommand


@dataclasses.dataclass
class Frame:
    """One frame seen by the proxy."""

    from_server: bool
    raw: bytes
    command: RemotingCommand | None
    error: str | None = None


class RecordingProxy:
    """Listens on 127.0.0.1:0 and forwards every connection to ``upstream``."""

    def __init__(self, upstream: str) -> None:
        host, _, port = upstream.rpartition(":")
        self.upstream = (host, int(port))
        self.frames: list[Frame] = []
        self.port: int | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def requests(self, code: int | None = None) -> list[RemotingCommand]:
        return [
            f.command
            for f in self.frames
            if not f.from_server and f.command is not None and (code is None or f.command.code == code)
        ]

    def response_to(self, request: RemotingCommand) -> Frame | None:
        """The server's answer to ``request`` (same opaque, response flag)."""
        for f in self.frames:
            if f.from_server and f.command is not None and f.command.is_response and (
                f.command.opaque == request.opaque
            ):
                return f
        return None

    def errors(self) -> list[str]:
        return [f.error for f in self.frames if f.error]

    async def _pump(self, src: trio.SocketStream, dst: trio.SocketStream, from_server: bool) -> None:
        splitter = FrameSplitter()
        try:
            while True:
                data = await src.receive_some(65536)
                if not data:
                    break
                await dst.send_all(data)
                splitter.feed(data)
                while True:
                    try:
                        raw = splitter.next_frame()
                    except CodecError as exc:
                        self.frames.append(Frame(from_server, b"", None, f"bad framing: {exc}"))
                        splitter = FrameSplitter()
                        break
                    if raw is None:
                        break
                    try:
                        self.frames.append(Frame(from_server, raw, RemotingCommand.decode(raw)))
                    except CodecError as exc:
                        self.frames.append(Frame(from_server, raw, None, f"undecodable frame: {exc}"))
            await dst.send_eof()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    async def _handle(self, client: trio.SocketStream) -> None:
        try:
            server = await trio.open_tcp_stream(*self.upstream)
        except OSError:
            await client.aclose()
            return
        async with client, server, trio.open_nursery() as nursery:
            nursery.start_soon(self._pump, client, server, False)
            nursery.start_soon(self._pump, server, client, True)

    async def run(self, *, task_status: trio.TaskStatus[RecordingProxy] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(functools.partial(trio.serve_tcp, self._handle, 0, host="127.0.0.1"))
            self.port = listeners[0].socket.getsockname()[1]
            task_status.started(self)
