"""A send's answer becomes the SendResult the typed response header gives, whichever path reads it; the wait it
ends gives it once.

References: ``SendMessageResponseHeader.from_ext_fields`` for the fields (errors included) and the keyword
constructor for MessageQueue; ``ClientAPI.send_result``'s own path for the compiled ``_speedups.SendResultMaker``,
which may leave an answer to that path but never reads one otherwise.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rocketpy.accel import compiled
from rocketpy.client import api
from rocketpy.client.api import ClientAPI, send_answer_fields_py
from rocketpy.client.errors import MQBrokerError
from rocketpy.client.results import SendResult
from rocketpy.codecs import CodecError, RemotingCommand, ResponseCode
from rocketpy.codecs.bodies import MessageQueue
from rocketpy.codecs.codes import SendStatus
from rocketpy.codecs.headers import SendMessageResponseHeader
from rocketpy.remoting.client_connection import _Waiter

TEXT = st.text(st.characters(codec="utf-8"), max_size=12)
NUMBERISH = st.from_regex(r"\A-?[0-9]{1,21}\Z") | st.sampled_from(
    ["+1", " 1", "1 ", "²", "١٢", "0x10", "", "-", "2147483648", "-2147483649", "9223372036854775808", "007"]) | TEXT
# what a hand-made RemotingCommand may hold besides strings
ODD = st.integers(-5, 5) | st.none() | st.booleans()
EXT = st.dictionaries(
    st.sampled_from(["msgId", "queueId", "queueOffset", "transactionId", "MSG_REGION", "TRACE_ON", "other"]),
    NUMBERISH | st.sampled_from(["true", "false", "DefaultRegion", "Region2"]) | ODD)
CODES = st.sampled_from([ResponseCode.SUCCESS, ResponseCode.FLUSH_DISK_TIMEOUT, ResponseCode.FLUSH_SLAVE_TIMEOUT,
                         ResponseCode.SLAVE_NOT_AVAILABLE, ResponseCode.SYSTEM_ERROR, 17])
_STATUS: dict[int, SendStatus] = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK, ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE}


def _reference_result(response: RemotingCommand, addr: str, mq: MessageQueue, uniq: str | None) -> object:
    """Java's processSendResponse as the typed header reads it: the SendResult, or the error's type and code."""
    status = _STATUS.get(response.code)
    if status is None:
        return (MQBrokerError, response.code)
    try:
        h = SendMessageResponseHeader.from_ext_fields(response.ext_fields)
    except CodecError as exc:
        return type(exc)
    ext = response.ext_fields or {}
    assert h.queue_offset is not None
    return SendResult(status, uniq, MessageQueue(topic=mq.topic, broker_name=mq.broker_name, queue_id=h.queue_id),
                      h.queue_offset, h.msg_id, h.transaction_id, ext.get("MSG_REGION") or "DefaultRegion",
                      ext.get("TRACE_ON") != "false")


def _result(response: RemotingCommand, addr: str, mq: MessageQueue, uniq: str | None) -> object:
    try:
        return ClientAPI.send_result(response, addr, mq, uniq)
    except MQBrokerError as exc:
        return (MQBrokerError, exc.response_code)
    except CodecError as exc:
        return type(exc)


@given(CODES, st.none() | EXT, st.none() | TEXT)
@example(ResponseCode.SUCCESS, {"msgId": "AB", "queueId": "3", "queueOffset": "12", "MSG_REGION": "R",
                                "TRACE_ON": "false"}, "U")
@example(ResponseCode.SUCCESS, {"msgId": "AB", "queueId": "-3", "queueOffset": "-12"}, None)
@example(ResponseCode.SUCCESS, {"msgId": "AB", "queueId": "3", "queueOffset": "9" * 18, "transactionId": "x"}, "U")
@example(ResponseCode.SUCCESS, {"queueId": "3", "queueOffset": "12"}, "U")
def test_send_result_is_what_the_typed_header_gives(code: int, ext: dict[str, object] | None,
                                                    uniq: str | None) -> None:
    response = RemotingCommand(code=code, flag=1, ext_fields=ext)  # type: ignore[arg-type]
    mq = MessageQueue(topic="T", broker_name="broker-a", queue_id=1)
    assert _result(response, "127.0.0.1:10911", mq, uniq) == _reference_result(response, "127.0.0.1:10911", mq, uniq)


maker = compiled("SendResultMaker")
make = maker(SendResult, MessageQueue) if maker is not None else None


def _pure_result(ext: dict[str, object], status: SendStatus = SendStatus.SEND_OK) -> object:
    """send_result without the compiled maker."""
    saved, api._make_send_result = api._make_send_result, None
    try:
        return _result(RemotingCommand(code=0, flag=1, ext_fields=ext), "a", MQ, "U")  # type: ignore[arg-type]
    finally:
        api._make_send_result = saved


MQ = MessageQueue(topic="T", broker_name="broker-a", queue_id=1)


@given(EXT)
@example({"msgId": "AB", "queueId": "3", "queueOffset": "12"})
@example({"msgId": "AB", "queueId": "123456789", "queueOffset": "9" * 18, "transactionId": "t", "TRACE_ON": "false",
          "MSG_REGION": ""})
@example({"msgId": "AB", "queueId": "1234567890", "queueOffset": "1"})
@example({"msgId": "AB", "queueId": "1", "queueOffset": "9" * 19})
def test_compiled_send_results_are_the_reference_results(ext: dict[str, object]) -> None:
    if make is None:
        pytest.skip("rocketpy._speedups is not built (or ROCKETPY_PURE is set)")
    got = make(SendStatus.SEND_OK, "U", MQ.topic, MQ.broker_name, ext)
    if got is not None:  # the compiled reading may leave an answer to the reference, never read it otherwise
        expected = _pure_result(ext)
        assert got == expected
        assert isinstance(expected, SendResult)
        assert [type(getattr(got, f.name)) for f in dataclasses.fields(got)] == \
            [type(getattr(expected, f.name)) for f in dataclasses.fields(expected)]
        assert vars(got.message_queue) == vars(expected.message_queue)
        assert send_answer_fields_py(ext) is not None  # type: ignore[arg-type]
    elif all(type(ext.get(k)) is str for k in ("msgId", "queueId", "queueOffset")):
        qid, qoff = str(ext["queueId"]), str(ext["queueOffset"])
        plain = (qid.isascii() and qid.isdigit() and len(qid) <= 9 and qoff.isascii() and qoff.isdigit()
                 and len(qoff) <= 18 and type(ext.get("transactionId", "")) is str)
        assert not plain, "a plain answer left to the reference"


def test_the_usual_answer_is_made_by_the_compiled_code() -> None:
    if make is None:
        pytest.skip("rocketpy._speedups is not built")
    ext = {"queueId": "3", "TRACE_ON": "true", "MSG_REGION": "DefaultRegion",
           "msgId": "7F00000100002A9F0000000000000000", "queueOffset": "0"}
    assert make(SendStatus.SEND_OK, "U", "T", "b", ext) == SendResult(
        SendStatus.SEND_OK, "U", MessageQueue(topic="T", broker_name="b", queue_id=3), 0,
        "7F00000100002A9F0000000000000000", None, "DefaultRegion", True)
    other = make(SendStatus.FLUSH_DISK_TIMEOUT, None, "T", "b", {**ext, "TRACE_ON": "false", "MSG_REGION": "r"})
    assert (other.send_status, other.region_id, other.trace_on) == (SendStatus.FLUSH_DISK_TIMEOUT, "r", False)
    assert make(SendStatus.SEND_OK, "U", "T", "b", None) is None


def test_the_maker_refuses_classes_it_cannot_fill() -> None:
    if maker is None:
        pytest.skip("rocketpy._speedups is not built")
    with pytest.raises(TypeError):
        maker(MessageQueue, MessageQueue)
    with pytest.raises(TypeError):
        maker(SendResult, SendResult)


@given(st.none() | TEXT, st.none() | TEXT, st.integers(-(2**31), 2**31 - 1))
def test_message_queue_of_is_the_keyword_constructor(topic: str | None, broker: str | None, queue_id: int) -> None:
    made, expected = MessageQueue.of(topic, broker, queue_id), MessageQueue(topic=topic, broker_name=broker,
                                                                          queue_id=queue_id)
    assert made == expected and hash(made) == hash(expected) and vars(made) == vars(expected)
    # every field is set by of(): a field added to MessageQueue must be added there too
    names = [f.name for f in dataclasses.fields(MessageQueue)]  # type: ignore[arg-type]
    assert names == ["topic", "broker_name", "queue_id", "extra"]
    assert made.extra is not MessageQueue.of(topic, broker, queue_id).extra  # not shared between queues


def test_an_answered_wait_gives_its_answer_once_and_keeps_nothing() -> None:
    """An answer that arrives before its sender parks waits in ``result``; once taken, the waiter (which may stay in
    the heap of deadlines until its deadline) no longer holds it, nor the request with its body."""
    pending: dict[int, Any] = {}
    request = RemotingCommand(code=10, body=b"x" * 1024)
    waiter = _Waiter(7, request, 3.0, pending)
    pending[7] = waiter
    answer = RemotingCommand(code=0, opaque=7, flag=1, body=b"y" * 1024)
    waiter.set_response(answer)
    waiter.set_response(RemotingCommand(code=1, opaque=7, flag=1))  # a second answer changes nothing
    waiter.set_error(RuntimeError("late"))
    assert waiter.done and waiter.request is None
    assert waiter.result is not None
    assert waiter.result.unwrap() is answer
    assert waiter.response is None
    # a waiter is itself only: two waiters never compare equal, and each hashes
    other = _Waiter(8, request, 3.0, pending)
    assert waiter != other and waiter == waiter and len({waiter, other}) == 2


def test_a_failed_wait_raises_its_error() -> None:
    waiter = _Waiter(9, RemotingCommand(code=10), 3.0, {})
    waiter.set_error(RuntimeError("closed"))
    waiter.set_response(RemotingCommand(code=0, opaque=9, flag=1))  # too late: the error stands
    assert waiter.result is not None
    with pytest.raises(RuntimeError, match="closed"):
        waiter.result.unwrap()
