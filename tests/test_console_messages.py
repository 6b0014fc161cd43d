"""The console's message list by time: paged (previous/next), every message found counted, and a list cut at its
cap says so, what it holds and how to see the rest."""

from __future__ import annotations

import itertools
import re
from urllib.parse import unquote

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("starlette")
pytest.importorskip("prometheus_client")

from test_console import _text, console  # noqa: E402

from rocketpy.client import make_message  # noqa: E402
from rocketpy.console import data as console_data  # noqa: E402

_IDS = re.compile(r'class="msg-link" href="/message\?topic=[^&]+&amp;id=([^"]+)"')


def _link(page: str, anchor: str) -> str | None:
    found = re.search(rf'<a id="{anchor}" href="([^"]+)"', page)
    return found.group(1).replace("&amp;", "&") if found else None


async def _send(producer, topic: str, count: int) -> list[str]:  # type: ignore[no-untyped-def]
    ids: list[str] = []
    for i in range(0, count, 50):
        result = await producer.send_batch([make_message(topic, f"m{j}") for j in range(i, min(i + 50, count))])
        ids += result.msg_id.split(",")
    return ids


@pytest.mark.timeout(120)
async def test_a_thousand_messages_in_pages_of_fifty() -> None:
    async with console() as (browser, _cluster, producer):
        sent = await _send(producer, "TPaged", 1000)
        assert len(set(sent)) == 1000
        _, page = await browser.get("/messages?topic=TPaged")
        assert "1000 found" in page, _text(page)[-600:]
        assert "1..50 on page 1 of 20" in _text(page)
        assert 'id="cut"' not in page and _link(page, "previous") is None
        seen: list[str] = []
        pages = 0
        while True:
            pages += 1
            seen += [unquote(i) for i in _IDS.findall(page)]
            nxt = _link(page, "next")
            if nxt is None:
                break
            _, page = await browser.get(nxt)
        assert pages == 20 and len(seen) == 1000
        assert sorted(seen) == sorted(sent)  # each message once, on one page
        assert "951..1000 on page 20 of 20" in _text(page)
        back = _link(page, "previous")
        assert back is not None and "page=19" in back
        # a page past the last shows the last
        _, last = await browser.get("/messages?topic=TPaged&page=99")
        assert "page 20 of 20" in _text(last)


async def _walk(browser, url: str) -> tuple[list[str], str | None, str]:  # type: ignore[no-untyped-def]
    """The ids listed on every page of a search, its link to the older messages, its first page's text."""
    _, page = await browser.get(url)
    first, older = _text(page), _link(page, "older")
    ids: list[str] = []
    while True:
        ids += [unquote(i) for i in _IDS.findall(page)]
        nxt = _link(page, "next")
        if nxt is None:
            return ids, older, first
        _, page = await browser.get(nxt)


@pytest.mark.timeout(120)
async def test_a_list_past_its_cap_says_it_is_cut_and_links_the_older_ones(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(console_data, "MAX_BROWSE", 100)
    async with console() as (browser, _cluster, producer):
        sent = set(await _send(producer, "TCut", 300))
        ids, older, text = await _walk(browser, "/messages?topic=TCut")
        found = re.search(r"(\d+) found", text)
        assert found is not None and 0 < int(found.group(1)) == len(ids) <= 100 + 32, text[-600:]
        assert "The list is cut at 100 messages" in text and "none of the older ones" in text
        assert older is not None
        # the cut list, then the older ones, then theirs: every message once
        listed, searches = list(ids), 1
        while older is not None and searches < 10:
            ids, older, text = await _walk(browser, older)
            listed += ids
            searches += 1
        assert older is None and "cut" not in text
        assert len(listed) == len(set(listed)) == 300
        assert set(listed) == sent
        assert searches >= 3


class _FakeAdmin:
    """Queues of store timestamps (non-decreasing per queue, as a broker stores them) behind the admin calls
    _browse makes; SEARCH_OFFSET_BY_TIMESTAMP answers the nearest offset in time, as the store does."""

    def __init__(self, queues: list[list[int]]) -> None:
        from types import SimpleNamespace

        self.queues = queues
        self.reads = 0
        self.client = SimpleNamespace(api=SimpleNamespace(search_offset=self.search_offset))

    async def topic_masters(self, topic: str) -> list[tuple[str, str]]:
        return [("broker-a", "127.0.0.1:10911")]

    async def queue_bounds(self, topic: str):  # type: ignore[no-untyped-def]
        from rocketpy.codecs.bodies import MessageQueue

        return {MessageQueue(topic=topic, broker_name="broker-a", queue_id=q): (0, len(ts))
                for q, ts in enumerate(self.queues)}

    async def search_offset(self, addr: str, mq, timestamp: int) -> int:  # type: ignore[no-untyped-def]
        ts = self.queues[mq.queue_id]
        if not ts:
            return 0
        return min(range(len(ts)), key=lambda i: abs(ts[i] - timestamp))

    async def read(self, addr: str, mq, offset: int):  # type: ignore[no-untyped-def]
        from rocketpy.codecs.message import MessageExt

        self.reads += 1
        ts = self.queues[mq.queue_id]
        msgs = [MessageExt(topic=mq.topic, queue_id=mq.queue_id, queue_offset=i, store_timestamp=ts[i])
                for i in range(offset, min(offset + 32, len(ts)))]
        return msgs, offset + len(msgs)


#: a queue's store times: steps of 0 (the same millisecond, as a batch's messages) to 5 ms
_queue = st.lists(st.integers(0, 5), min_size=10, max_size=150).map(lambda steps: list(itertools.accumulate(steps)))


@given(queues=st.lists(_queue, min_size=1, max_size=4), cap=st.integers(1, 30), begin=st.integers(0, 30),
       span=st.integers(0, 800))
async def test_browsing_lists_each_message_of_the_range_once_across_the_cut_searches(  # type: ignore[no-untyped-def]
        queues, cap, begin, span) -> None:
    admin = _FakeAdmin(queues)
    data = console_data.ConsoleData(admin)  # type: ignore[arg-type]
    end = begin + span
    expected = {(q, i) for q, ts in enumerate(queues) for i, t in enumerate(ts) if begin <= t <= end}
    listed: list[tuple[int, int]] = []
    for _ in range(len(expected) + 2):
        browsed = await data._browse("T", begin, end, admin.read, cap)
        got = [(m.queue_id, m.queue_offset) for m in browsed.messages]
        times = [m.store_timestamp for m in browsed.messages]
        assert times == sorted(times, reverse=True)  # newest first
        listed += got
        if not browsed.cut:
            break
        # cut: something listed (past the cap when more share a millisecond), all of it after ``since``
        assert got and all(t > browsed.since for t in times)
        end = browsed.since
    assert not browsed.cut
    assert len(listed) == len(set(listed)) and set(listed) == expected
