"""message_trace's timeline: store records (stamped in milliseconds by the broker) among capture events (stamped
in microseconds) in the order things happened, when both fall in one millisecond. No Spark needed."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from rocketpy.spark.jobs.message_trace import in_causal_order

T0 = datetime(2026, 11, 21, 22, 16, 52)


def at(ms: int, us: int = 0) -> datetime:
    return T0 + timedelta(milliseconds=ms, microseconds=us)


def ev(event: str, time: datetime | None, tag: str = "") -> dict[str, Any]:
    return {"event": event, "time": time, "tag": tag}


def names(events: list[dict[str, Any]]) -> list[str]:
    return [e["event"] + e["tag"] for e in events]


def test_a_record_stored_in_the_millisecond_of_its_send_comes_after_the_send() -> None:
    # as message_trace finds them: the store's records first, then the capture's events
    found = [ev("stored", at(123)), ev("sent", at(123, 456)), ev("send_result", at(123, 789)),
             ev("pulled", at(124, 10))]
    assert names(in_causal_order(found)) == ["sent", "stored", "send_result", "pulled"]


def test_a_record_with_no_cause_in_its_millisecond_comes_before_that_millisecond_s_captures() -> None:
    # the schedule's timer re-puts the message into %RETRY% at .600; the consumer pulls it at .600300
    found = [ev("retry", at(600)), ev("pulled", at(600, 300), " again"), ev("stored", at(100)),
             ev("sent", at(99, 900))]
    assert names(in_causal_order(found)) == ["sent", "stored", "retry", "pulled again"]


def test_a_send_back_and_its_schedule_in_one_millisecond_after_the_pull() -> None:
    found = [ev("stored", at(1)), ev("scheduled", at(500)), ev("sent", at(0, 700)), ev("send_result", at(1, 200)),
             ev("pulled", at(500, 100)), ev("sent_back", at(500, 400))]
    assert names(in_causal_order(found)) == ["sent", "stored", "send_result", "pulled", "sent_back", "scheduled"]


def test_a_delayed_send_is_scheduled_after_it_and_a_commit_stores_after_it() -> None:
    found = [ev("scheduled", at(10)), ev("half", at(20)), ev("stored", at(30)), ev("sent", at(10, 300), " delayed"),
             ev("sent", at(20, 100), " half"), ev("send_result", at(20, 900)), ev("check_transaction", at(30, 50)),
             ev("end_transaction", at(30, 200))]
    assert names(in_causal_order(found)) == [
        "sent delayed", "scheduled", "sent half", "half", "send_result", "check_transaction", "end_transaction",
        "stored"]


def test_events_of_one_time_keep_their_order_and_timeless_ones_come_last() -> None:
    found = [ev("stored", at(5), " a"), ev("stored", at(5), " b"), ev("queried", None), ev("pulled", at(5, 1), " 1"),
             ev("pulled", at(5, 1), " 2")]
    assert names(in_causal_order(found)) == ["stored a", "stored b", "pulled 1", "pulled 2", "queried"]
