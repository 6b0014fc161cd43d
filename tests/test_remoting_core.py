"""The connection core without I/O: bytes and times handed in, answers and requests out.

A peer that answers out of order, late, never, or closes mid-frame, driven through memory buffers and a
time that the test moves itself (the core reads no clock)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketpy.codecs import CodecError, RemotingCommand, ResponseCode
from rocketpy.remoting.core import SWEEP_AT, ConnectionCore
from rocketpy.remoting.errors import ConnectionClosedError, RemotingTimeoutError

GET_ROUTE = 105


class Wait:
    """The smallest Waiter a driver could give the core."""

    def __init__(self, opaque: int, timeout: float = 3.0, code: int = GET_ROUTE) -> None:
        self.opaque = opaque
        self.timeout = timeout
        self.request: Any = RemotingCommand(code=code, opaque=opaque)
        self.response: RemotingCommand | None = None
        self.error: BaseException | None = None

    @property
    def done(self) -> bool:
        return self.response is not None or self.error is not None

    def set_response(self, response: RemotingCommand) -> None:
        assert not self.done, "a wait ends once"
        self.response = response

    def set_error(self, error: BaseException) -> None:
        assert not self.done, "a wait ends once"
        self.error = error


def answer(opaque: int, body: bytes = b"") -> bytes:
    return RemotingCommand(code=GET_ROUTE, opaque=opaque).response(ResponseCode.SUCCESS, body=body).encode()


def send(core: ConnectionCore, now: float, timeout: float = 3.0) -> Wait:
    """What a driver does to send a request: a wait under a fresh opaque, its deadline, its frame queued."""
    wait = Wait(core.requests.next_opaque(), timeout)
    core.requests.add(wait)
    core.requests.arm(wait, now + timeout)
    core.queue(wait.request.encode())
    return wait


def test_answers_in_any_order_reach_their_own_waits() -> None:
    core = ConnectionCore("broker:10911")
    waits = [send(core, 0.0) for _ in range(5)]
    data = b"".join(answer(w.opaque, f"body{w.opaque}".encode()) for w in reversed(waits))
    assert core.receive(data) == []  # answers only: no request of the peer's
    assert core.answered == 5
    for w in waits:
        assert w.response is not None
        assert w.response.body == f"body{w.opaque}".encode()
        assert w.response.request_code == GET_ROUTE  # what complete() reads off the request
    assert len(core.requests) == 0


@given(st.lists(st.integers(min_value=1, max_value=64), min_size=1, max_size=40))
def test_any_chunking_of_the_stream_gives_the_same_answers(cuts: list[int]) -> None:
    core = ConnectionCore("broker:10911")
    waits = [send(core, 0.0) for _ in range(4)]
    stream = b"".join(answer(w.opaque, b"x" * w.opaque * 7) for w in waits)
    pos = 0
    for cut in cuts:
        core.receive(stream[pos:pos + cut])
        pos += cut
    core.receive(stream[pos:])
    assert [w.response.body for w in waits if w.response is not None] == [b"x" * w.opaque * 7 for w in waits]


def test_a_late_answer_is_dropped_after_the_wait_timed_out(caplog: pytest.LogCaptureFixture) -> None:
    core = ConnectionCore("broker:10911")
    early = send(core, 0.0, timeout=1.0)
    later = send(core, 0.0, timeout=3.0)
    assert core.requests.next_deadline == 1.0
    assert core.requests.expire(0.999) == 0 and not early.done  # not yet
    assert core.requests.expire(1.0) == 1
    assert isinstance(early.error, RemotingTimeoutError)
    assert str(early.error) == "wait response on the channel <broker:10911> timeout, 1000(ms)"  # Java's text
    assert core.requests.next_deadline == 3.0 and not later.done
    with caplog.at_level("WARNING", logger="rocketpy.remoting"):
        core.receive(answer(early.opaque))  # too late: nobody waits for it any more
    assert early.response is None
    assert "matches no request" in caplog.text
    core.receive(answer(later.opaque))
    assert later.response is not None
    assert core.requests.next_deadline == float("inf")  # the finished wait does not keep the timer


def test_a_peer_that_never_answers_times_every_wait_out_at_its_own_deadline() -> None:
    core = ConnectionCore("broker:10911")
    waits = [send(core, float(t), timeout=2.0) for t in range(5)]  # sent at 0, 1, 2, 3, 4
    ended = []
    for now in (2.0, 3.5, 6.0):
        core.requests.expire(now)
        ended.append(sum(w.done for w in waits))
    assert ended == [1, 2, 5]
    assert all(isinstance(w.error, RemotingTimeoutError) for w in waits)
    assert len(core.requests) == 0


def test_a_peer_that_closes_mid_frame_fails_every_wait_with_its_own_error() -> None:
    core = ConnectionCore("broker:10911")
    waits = [send(core, 0.0) for _ in range(3)]
    frame = answer(waits[0].opaque, b"y" * 100)
    core.receive(frame[:50])  # half an answer
    assert not waits[0].done and core.reader.buffered == 50
    core.close(ConnectionClosedError("connection to broker:10911 closed"))
    assert all(isinstance(w.error, ConnectionClosedError) for w in waits)
    assert len({id(w.error) for w in waits}) == 3  # a copy each, no shared traceback
    assert core.outbox == [] and core.closed
    assert core.requests.next_deadline == float("inf")


def test_the_peers_requests_come_out_in_order_between_answers() -> None:
    core = ConnectionCore("broker:10911")
    wait = send(core, 0.0)
    check = RemotingCommand(code=39, opaque=900, ext_fields={"msgId": "a"})  # CHECK_TRANSACTION_STATE
    notify = RemotingCommand(code=40, opaque=901)  # NOTIFY_CONSUMER_IDS_CHANGED
    requests = core.receive(check.encode() + answer(wait.opaque) + notify.encode())
    assert [(r.code, r.opaque) for r in requests] == [(39, 900), (40, 901)]  # type: ignore[union-attr]
    assert wait.response is not None and core.answered == 1


def test_a_malformed_frame_is_refused() -> None:
    core = ConnectionCore("broker:10911", max_frame=1024)
    with pytest.raises(CodecError):
        core.receive((1 << 30).to_bytes(4, "big") + b"\x00" * 8)  # an absurd length


def test_frames_queued_go_out_in_order_and_a_partial_write_keeps_the_rest_first() -> None:
    core = ConnectionCore("broker:10911")
    assert [core.queue(f) for f in (b"aa", b"bb", b"cc")] == [1, 2, 3]
    data = core.data_to_send()
    assert data == b"aabbcc" and core.outbox == []
    core.unsent(memoryview(data)[3:])  # the socket took 3 bytes
    core.queue(b"dd")
    assert core.data_to_send() == b"bccdd"
    assert core.data_to_send() == b""


def test_a_cancelled_wait_is_forgotten_and_its_answer_dropped() -> None:
    core = ConnectionCore("broker:10911")
    wait = send(core, 0.0)
    core.requests.forget(wait.opaque, wait)
    core.receive(answer(wait.opaque))
    assert wait.response is None and len(core.requests) == 0


def test_answers_to_what_was_in_flight_when_the_connection_closed_are_expected(
        caplog: pytest.LogCaptureFixture) -> None:
    """A consumer's shutdown closes its connections with pulls in flight: an answer to one of them that the
    reader still hands in after the close is no stray (no warning); an answer to an opaque never sent still is."""
    core = ConnectionCore("broker:10911")
    pulls = [send(core, 0.0, timeout=30.0) for _ in range(3)]
    core.close(ConnectionClosedError("connection to broker:10911 closed"))
    assert all(isinstance(w.error, ConnectionClosedError) for w in pulls)
    with caplog.at_level("DEBUG", logger="rocketpy.remoting"):
        core.receive(answer(pulls[0].opaque) + answer(pulls[2].opaque))
        assert not [r for r in caplog.records if r.levelname == "WARNING"], caplog.text
        assert caplog.text.count("matches no request") == 2  # still said, at debug level
        caplog.clear()
        core.receive(answer(99))  # never sent on this connection
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", "response with opaque 99 from broker:10911 matches no request")]
    assert all(w.response is None for w in pulls)


def test_finished_waits_do_not_pile_up_in_the_deadline_heap() -> None:
    core = ConnectionCore("broker:10911")
    for i in range(3 * SWEEP_AT):
        wait = send(core, float(i))
        core.receive(answer(wait.opaque))
    assert len(core.requests._deadlines) <= SWEEP_AT + 1


def test_opaques_stay_positive_java_ints() -> None:
    core = ConnectionCore("broker:10911", opaques=iter([0x7FFFFFFF, 0x80000000, 0x80000001]))
    assert [core.requests.next_opaque() for _ in range(3)] == [0x7FFFFFFF, 0, 1]
