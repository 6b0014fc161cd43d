"""The web console over the admin protocol, against our NameServer and broker (ASGI calls, no browser):
pages show the cluster's data, changes need POST + CSRF, errors are messages, logins and read-only hold,
and /metrics speaks rocketmq-exporter's names."""

from __future__ import annotations

import csv
import io
import re
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote, unquote, urlencode

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("starlette")
pytest.importorskip("prometheus_client")

from clusters import real_cluster  # noqa: E402

from rocketpy.client import Producer, make_message  # noqa: E402
from rocketpy.client.admin import Admin  # noqa: E402
from rocketpy.codecs.bodies import SubscriptionGroupConfig, TopicConfig  # noqa: E402
from rocketpy.codecs.trace import (  # noqa: E402
    MESSAGE_TYPES,
    TraceRecord,
    decode_trace_data,
    encode_pub,
    encode_sub_after,
    encode_sub_before,
    timeline,
)
from rocketpy.console.app import ConsoleSettings, build_app  # noqa: E402
from rocketpy.console.auth import SESSION_COOKIE, parse_users  # noqa: E402
from rocketpy.console.data import ConsoleData  # noqa: E402
from rocketpy.testing import wait_until  # noqa: E402


class Browser:
    """Calls an ASGI app in process and keeps its cookies."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.cookies: dict[str, str] = {}

    async def request(self, method: str, path: str, form: dict[str, str] | None = None,
                      headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
        path, _, query = path.partition("?")
        body = urlencode(form or {}).encode()
        hdrs = [(b"host", b"console.test")]
        if self.cookies:
            hdrs.append((b"cookie", "; ".join(f"{k}={v}" for k, v in self.cookies.items()).encode()))
        if form is not None:
            hdrs += [(b"content-type", b"application/x-www-form-urlencoded"),
                     (b"content-length", str(len(body)).encode())]
        for k, v in (headers or {}).items():
            hdrs.append((k.lower().encode(), v.encode()))
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
                 "scheme": "http", "path": unquote(path), "raw_path": path.encode(), "query_string": query.encode(),
                 "root_path": "", "headers": hdrs, "client": ("127.0.0.1", 1), "server": ("console.test", 80)}
        sent = False
        out: dict[str, Any] = {"body": b"", "headers": []}

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await trio.sleep_forever()
            raise AssertionError

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                out["status"] = message["status"]
                out["headers"] = [(k.decode(), v.decode()) for k, v in message["headers"]]
            elif message["type"] == "http.response.body":
                out["body"] += message.get("body", b"")

        with trio.fail_after(20):
            await self.app(scope, receive, send)
        headers_out = dict(out["headers"])
        for k, v in out["headers"]:
            if k == "set-cookie":
                name, _, rest = v.partition("=")
                value = rest.split(";")[0].strip('"')
                if value and "max-age=0" not in v.lower():
                    self.cookies[name] = value
                else:
                    self.cookies.pop(name, None)
        return out["status"], headers_out, out["body"].decode("utf-8", "replace")

    async def get(self, path: str) -> tuple[int, str]:
        status, _, text = await self.request("GET", path)
        return status, text

    async def post(self, path: str, form: dict[str, str], *, csrf_from: str = "/") -> tuple[int, str]:
        """Submit like a page would: with the CSRF token of the form just loaded; follows the redirect."""
        _, page = await self.get(csrf_from)
        token = re.search(r'name="csrf" value="([^"]+)"', page)
        assert token, "the page has no change form"
        status, headers, text = await self.request("POST", path, {**form, "csrf": token.group(1)})
        if status == 303:
            return await self.get(headers["location"])
        return status, text


@asynccontextmanager
async def console(**settings: Any):
    """The app over a fresh admin client (as ``rocketpy console`` starts it) and a producer of its own."""
    async with real_cluster() as cluster, Admin(cluster.namesrv) as admin:
        data = ConsoleData(admin)
        try:
            async with Producer("PG_console_test", namesrv=cluster.namesrv) as producer:
                app = build_app(ConsoleSettings(namesrv=cluster.namesrv, **settings), data)
                yield Browser(app), cluster, producer
        finally:
            await data.aclose()


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


@pytest.mark.timeout(60)
async def test_pages_show_the_cluster_and_changes_go_through_admin_calls():
    async with console() as (browser, cluster, producer):
        status, page = await browser.get("/")
        assert status == 200 and "broker-a" in page and "V4_9_8" in page and cluster.broker_addr in page
        status, page = await browser.post("/topics/save", {"topic": "TConsole", "read": "2", "write": "2",
                                                            "perm": "RW", "back": "/topics"}, csrf_from="/topics")
        assert status == 200 and "topic TConsole saved" in page

        async def routed() -> bool:  # the broker registers the new topic with the NameServer in the background
            _, page = await browser.get("/topic/TConsole")
            return bool(re.search(r"<td class=\"n\">2</td>\s*<td class=\"n\">2</td>", page))  # 2 read, 2 write

        await wait_until(routed, timeout=5, tick=0.05)
        status, page = await browser.post("/topic/TConsole/send", {"tags": "TagA", "keys": "order-42",
                                                                   "body": '{"id": 42}', "back": "/topic/TConsole"},
                                          csrf_from="/topic/TConsole")
        assert "sent: SEND_OK" in page, _text(page)
        msg_id = re.search(r"msgId=([0-9A-F]+)", page).group(1)
        _, page = await browser.get("/topics")
        assert "TConsole" in page and "TBW102" not in page  # system topics hidden by default
        _, page = await browser.get("/topics?system=1")
        assert "TBW102" in page
        # by key, then the detail by id with the JSON body pretty-printed
        _, page = await browser.get("/messages?" + urlencode({"topic": "TConsole", "key": "order-42"}))
        assert "1 found" in page and msg_id in page, _text(page)[-600:]
        _, page = await browser.get("/message?" + urlencode({"topic": "TConsole", "id": msg_id}))
        assert "order-42" in page and "&#34;id&#34;: 42" in page and "TagA" in page
        _, page = await browser.get("/messages?" + urlencode({"topic": "TConsole"}))  # the last hour
        assert "1 found" in page and msg_id in page
        # a group with offsets: lag 1, then reset to now leaves nothing behind
        await producer.send(make_message("TConsole", b"second", keys="k2"))
        status, page = await browser.post("/groups/save", {"group": "GConsole", "back": "/groups"},
                                          csrf_from="/groups")
        assert "group GConsole saved" in page
        _, page = await browser.get("/group/GConsole")
        assert "GConsole" in page
        # an error from the broker is a message on the page, not a trace
        status, page = await browser.post("/group/GConsole/reset", {"topic": "NoSuchTopic", "time": "0",
                                                                    "back": "/group/GConsole"},
                                          csrf_from="/group/GConsole")
        assert status == 200 and 'class="err"' in page and "Traceback" not in page
        status, page = await browser.get("/topic/NoSuchTopic")
        assert status == 200 and 'id="error"' in page and "NoSuchTopic" in page
        status, page = await browser.post("/topic/TConsole/delete", {"back": "/topic/TConsole"},
                                          csrf_from="/topic/TConsole")
        assert "topic TConsole deleted" in page
        _, page = await browser.get("/topics")
        assert "TConsole" not in _text(page).replace("topic TConsole deleted", "")


@pytest.mark.timeout(60)
async def test_message_detail_shows_consumers_and_resends_to_one_client():
    from rocketpy.client import ClientConfig, ConsumeFromWhere, PushConsumer

    got: list[bytes] = []
    async with console() as (browser, cluster, producer):
        sent = await producer.send(make_message("TResend", b"resend me", keys="rk"))
        config = ClientConfig(namesrv_addr=cluster.namesrv, rebalance_interval=1.0,
                              persist_consumer_offset_interval=0.2, poll_name_server_interval=1.0)
        consumer = PushConsumer("GResend", lambda msgs, ctx: got.extend(m.body for m in msgs), config=config,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        consumer.subscribe("TResend", "*")
        async with consumer:
            await wait_until(lambda: got, timeout=20, tick=0.05)
            detail = "/message?" + urlencode({"topic": "TResend", "id": sent.msg_id})
            page = ""

            async def consumed() -> bool:  # the offset reaches the broker
                nonlocal page
                page = (await browser.get(detail))[1]
                return "CONSUMED" in page.replace("NOT_CONSUMED", "")

            await wait_until(consumed, timeout=10, tick=0.1)
            assert re.search(r"GResend</a></td><td>CONSUMED</td>", page)
            status, page = await browser.post("/message/resend", {
                "topic": "TResend", "id": sent.msg_id, "group": "GResend", "client": consumer.client.client_id,
                "back": detail}, csrf_from=detail)
            assert re.search(r"consumed by \S+: CR_SUCCESS", page), _text(page)[1200:1900]
            assert got == [b"resend me", b"resend me"]


@pytest.mark.timeout(60)
async def test_messages_by_time_on_a_fresh_console():
    """Sent by another client: the console's own client never looked the topic up before the search."""
    async with console() as (browser, cluster, _producer):
        async with Producer("PG_elsewhere", namesrv=cluster.namesrv) as other:
            ids = [(await other.send(make_message("TFresh", f"m{i}", keys=f"f{i}"))).msg_id for i in range(3)]
        _, page = await browser.get("/messages?topic=TFresh")
        assert "3 found" in page and all(i in page for i in ids), _text(page)[-400:]
        _, page = await browser.get("/messages?" + urlencode({"topic": "TFresh", "begin": "0", "end": "1"}))
        assert "0 found" in page  # the range still counts


async def test_changes_need_post_and_the_csrf_token():
    async with console() as (browser, cluster, _producer):
        await browser.get("/")
        status, _, text = await browser.request("POST", "/topics/save", {"topic": "TForged"})
        assert status == 403 and "CSRF" in text
        status, _, text = await browser.request("POST", "/topics/save", {"topic": "TForged", "csrf": "0" * 64})
        assert status == 403
        status, _, _ = await browser.request("GET", "/topics/save")
        assert status == 405
        other = Browser(browser.app)  # another session's token does not work either
        _, page = await other.get("/topics")
        token = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
        status, _, _ = await browser.request("POST", "/topics/save", {"topic": "TForged", "csrf": token})
        assert status == 403
        _, page = await browser.get("/topics?system=1")
        assert "TForged" not in page


async def test_read_only_refuses_changes_and_hides_forms():
    async with console(read_only=True) as (browser, _cluster, _producer):
        _, page = await browser.get("/topics")
        assert "read-only" in page and 'id="topic-create"' not in page
        token = re.search(r'name="csrf" value="([^"]+)"', (await browser.get("/"))[1])
        assert token is None
        status, _, _ = await browser.request("POST", "/groups/save", {"group": "G", "csrf": "x"})
        assert status == 403


async def test_login_with_a_users_file():
    users = parse_users("# name=password[,1]\nadmin=secret,1\nviewer=look\n")
    async with console(users=users) as (browser, _cluster, _producer):
        status, headers, _ = await browser.request("GET", "/topics")
        assert status == 303 and headers["location"].startswith("/login")
        status, _, text = await browser.request("POST", "/login?next=/topics", {"user": "admin", "password": "no"})
        assert status == 401 and "wrong user or password" in text
        status, _, _ = await browser.request("GET", "/metrics")
        assert status == 401
        viewer = Browser(browser.app)
        status, headers, _ = await viewer.request("POST", "/login?next=/topics", {"user": "viewer", "password": "look"})
        assert status == 303 and headers["location"] == "/topics" and SESSION_COOKIE in viewer.cookies
        _, page = await viewer.get("/topics")
        assert 'id="topic-create"' not in page  # not an administrator
        status, _, _ = await viewer.request("POST", "/topics/save", {
            "topic": "TV", "csrf": re.search(r'name="csrf" value="([^"]+)"', page).group(1)
            if 'name="csrf"' in page else "x"})
        assert status == 403
        status, _, _ = await browser.request("POST", "/login", {"user": "admin", "password": "secret"})
        _, page = await browser.get("/topics")
        assert 'id="topic-create"' in page and "admin" in page


async def test_metrics_use_the_exporter_names():
    async with console() as (browser, cluster, producer):
        for i in range(3):
            await producer.send(make_message("TMetrics", f"m{i}".encode()))
        broker = cluster.broker
        broker.stats_manager.sample(broker)
        status, headers, text = await browser.request("GET", "/metrics")
    assert status == 200 and headers["content-type"].startswith("text/plain")
    for name in ("rocketmq_broker_tps", "rocketmq_broker_qps", "rocketmq_producer_offset", "rocketmq_producer_tps",
                 "rocketmq_producer_message_size", "rocketmq_group_diff", "rocketmq_consumer_tps",
                 "rocketmq_brokeruntime_msg_put_total_today_now"):
        assert f"# TYPE {name} gauge" in text, name
    assert re.search(r'rocketmq_producer_offset\{broker="broker-a",cluster="DefaultCluster",topic="TMetrics"\} 3\.0',
                     text), text
    assert re.search(r"rocketmq_brokeruntime_msg_put_total_today_now\{.*\} [1-9]", text)
    for name in ("rocketmq_producer_tps", "rocketmq_producer_message_size"):  # sampled once: a rate of 0
        assert re.search(name + r'\{broker="broker-a",cluster="DefaultCluster",topic="TMetrics"\} 0\.0', text), name


@pytest.mark.timeout(60)
async def test_trace_timeline_of_python_clients_with_enable_msg_trace():
    from rocketpy.client import ClientConfig, ConsumeFromWhere, PushConsumer

    seen: list[str] = []
    async with console() as (browser, cluster, _producer):
        config = ClientConfig(namesrv_addr=cluster.namesrv, rebalance_interval=1.0, poll_name_server_interval=1.0)
        async with Producer("PG_traced", namesrv=cluster.namesrv, enable_msg_trace=True) as traced:
            result = await traced.send(make_message("TTraced", b"traced body", tags="T1", keys="trace-key"))
            consumer = PushConsumer("CG_traced", lambda msgs, ctx: seen.extend(m.uniq_key for m in msgs),
                                    config=config, enable_msg_trace=True,
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
            consumer.subscribe("TTraced", "*")
            async with consumer:
                await wait_until(lambda: result.msg_id in seen, timeout=20, tick=0.05)
        # both trace dispatchers flushed on shutdown: the timeline has send, consume start and end
        page = ""

        async def timeline() -> bool:
            nonlocal page
            _, page = await browser.get("/trace?id=" + result.msg_id)
            return 'class="step-SubAfter"' in page

        await wait_until(timeline, timeout=10, tick=0.1)
        steps = re.findall(r'class="step-(\w+)"', page)
        assert steps == ["Pub", "SubBefore", "SubAfter"], steps
        assert "PG_traced" in page and "CG_traced" in page and "TTraced" in page and "trace-key" in page


async def test_metrics_are_gathered_once_per_max_age(monkeypatch, virtual_clock):
    from rocketpy.console import metrics_cache

    calls: list[int] = []

    async def fake_render(data: Any) -> bytes:
        calls.append(1)
        await trio.sleep(1)  # a slow gathering: a second scrape meanwhile waits for it
        return str(len(calls)).encode()

    monkeypatch.setattr(metrics_cache, "render", fake_render)
    cache = metrics_cache.MetricsCache(max_age=10)
    got: list[bytes] = []

    async def scrape() -> None:
        got.append(await cache.get(None))  # type: ignore[arg-type]

    async with trio.open_nursery() as nursery:
        nursery.start_soon(scrape)
        nursery.start_soon(scrape)
    assert got == [b"1", b"1"] and len(calls) == 1
    await trio.sleep(5)
    assert await cache.get(None) == b"1"  # type: ignore[arg-type]
    await trio.sleep(5)
    assert await cache.get(None) == b"2" and len(calls) == 2  # type: ignore[arg-type]


def test_trace_records_round_trip_and_order():
    pub = TraceRecord("Pub", "MSG1", 1000, "DefaultRegion", "PG", topic="T", tags="a", keys="k", store_host="h:1",
                      body_length=5, cost_time=3, msg_type="Normal_Msg", offset_msg_id="OFF", success=True)
    before = TraceRecord("SubBefore", "MSG1", 1010, "DefaultRegion", "CG", request_id="R1", retry_times=0, keys="k")
    after = TraceRecord("SubAfter", "MSG1", 0, request_id="R1", cost_time=7, success=True, keys="k",
                        group="CG", context_code=0)
    after.timestamp = 1020
    text = encode_pub(pub) + encode_sub_before(before) + encode_sub_after(after)
    records = decode_trace_data(text)
    assert [r.trace_type for r in records] == ["Pub", "SubBefore", "SubAfter"]
    assert records[0] == pub and records[1] == before and records[2] == after
    ordered = timeline(list(reversed(records)) + [TraceRecord("Pub", "OTHER", 1)], "MSG1")
    assert [r.trace_type for r in ordered] == ["Pub", "SubBefore", "SubAfter"]
    assert decode_trace_data("Pub\x01broken\x02Nope\x01x\x02") == []  # short and unknown records are skipped


_field = st.text(alphabet=st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), max_size=12)
_ms = st.integers(min_value=0, max_value=2**62)


@given(
    st.lists(
        st.one_of(
            st.builds(lambda *a: TraceRecord("Pub", a[0], a[1], a[2], a[3], topic=a[4], tags=a[5], keys=a[6],
                                             store_host=a[7], body_length=a[8], cost_time=a[9], msg_type=a[10],
                                             offset_msg_id=a[11], success=a[12]),
                      _field, _ms, _field, _field, _field, _field, _field, _field, st.integers(0, 2**31 - 1),
                      st.integers(0, 2**31 - 1), st.sampled_from(MESSAGE_TYPES), _field, st.booleans()),
            st.builds(lambda *a: TraceRecord("SubBefore", a[0], a[1], a[2], a[3], request_id=a[4], retry_times=a[5],
                                             keys=a[6]),
                      _field, _ms, _field, _field, _field, st.integers(0, 16), _field),
            st.builds(lambda *a: TraceRecord("SubAfter", a[0], a[1], group=a[2], request_id=a[3], cost_time=a[4],
                                             success=a[5], keys=a[6], context_code=a[7]),
                      _field, _ms, _field, _field, st.integers(0, 2**31 - 1), st.booleans(), _field, st.integers(0, 4)),
        ),
        max_size=5,
    )
)
def test_trace_encoding_round_trips(records: list[TraceRecord]) -> None:
    encoders = {"Pub": encode_pub, "SubBefore": encode_sub_before, "SubAfter": encode_sub_after}
    text = "".join(encoders[r.trace_type](r) for r in records)
    assert decode_trace_data(text) == records


async def _dead_letters(cluster: Any, producer: Producer, topic: str, group: str, bodies: list[bytes]) -> list[str]:
    """Send ``bodies`` to ``topic`` and give each up as a consumer of ``group`` would after its last retry
    (CONSUMER_SEND_MSG_BACK with delay level -1: straight to %DLQ%group). Their client ids."""
    ids = [(await producer.send(make_message(topic, b, keys=f"dead-{i}"))).msg_id for i, b in enumerate(bodies)]
    async with Admin(cluster.namesrv) as admin:
        for msg_id in ids:
            msg = await admin.view_message(msg_id, topic)
            await admin.client.api.send_message_back(msg.store_host, msg, group, -1, 16, None)
    return ids


@pytest.mark.timeout(60)
async def test_healthz_says_whether_the_namesrv_answers():
    async with console() as (browser, cluster, _producer):
        status, _, text = await browser.request("GET", "/healthz")
        assert status == 200 and '"status":"UP"' in text and '"brokers":1' in text and cluster.namesrv in text
    from rocketpy.testing import free_port

    gone = f"127.0.0.1:{free_port()}"  # nothing listens there
    async with Admin(gone) as admin:
        data = ConsoleData(admin)
        app = build_app(ConsoleSettings(namesrv=gone, users=parse_users("a=b,1")), data)
        status, _, text = await Browser(app).request("GET", "/healthz")  # no login needed
        await data.aclose()
    assert status == 503 and '"status":"DOWN"' in text and "GET_BROKER_CLUSTER_INFO" in text, text


@pytest.mark.timeout(60)
async def test_topic_list_filters_by_kind_with_counts_and_message_numbers():
    async with console() as (browser, cluster, producer):
        for i in range(3):
            await producer.send(make_message("TKindNormal", f"m{i}"))
        await browser.post("/topics/save", {"topic": "TKindOrder", "read": "2", "write": "2", "perm": "RW",
                                            "order": "on", "back": "/topics"}, csrf_from="/topics")
        async with Admin(cluster.namesrv) as admin:
            for topic in ("%RETRY%GKind", "%DLQ%GKind"):
                await admin.create_topic(cluster.broker_addr, TopicConfig(topic_name=topic, read_queue_nums=1,
                                                                          write_queue_nums=1))

        def kinds(page: str) -> dict[str, str]:
            return dict(re.findall(r'<tr data-topic="([^"]+)">.*?<td class="kind">(\w+)</td>', page, re.S))

        page = ""

        async def listed() -> bool:  # the broker registers new topics with the NameServer in the background
            nonlocal page
            page = (await browser.get("/topics?type=NORMAL&type=ORDER&type=RETRY&type=DLQ&type=SYSTEM"))[1]
            return {"TKindOrder", "%RETRY%GKind", "%DLQ%GKind"} <= set(kinds(page))

        await wait_until(listed, timeout=10, tick=0.1)
        got = kinds(page)
        assert (got["TKindNormal"], got["TKindOrder"], got["%RETRY%GKind"], got["%DLQ%GKind"], got["TBW102"]) == (
            "NORMAL", "ORDER", "RETRY", "DLQ", "SYSTEM")
        async with Admin(cluster.namesrv) as admin:  # mqadmin updateTopic -o true's order conf
            assert await admin.get_kv_config("ORDER_TOPIC_CONFIG", "TKindOrder") == "broker-a:2"
        _, detail = await browser.get("/topic/TKindOrder")  # the update form starts from what the topic is
        assert 'id="update-order" checked' in detail and "<option selected>RW</option>" in detail
        counts = dict(re.findall(r'data-kind="(\w+)">\((\d+)\)', page))
        assert int(counts["ORDER"]) == 1 and int(counts["DLQ"]) == 1 and int(counts["RETRY"]) >= 1
        assert int(counts["NORMAL"]) == sum(1 for k in got.values() if k == "NORMAL")
        row = re.search(r'<tr data-topic="TKindNormal">.*?</tr>', page, re.S).group(0)
        assert re.search(r'class="n messages">3<', row), row
        _, page = await browser.get("/topics?type=DLQ")
        assert set(kinds(page)) == {"%DLQ%GKind"}
        _, page = await browser.get("/topics")  # the default: normal and order topics
        assert set(kinds(page)) >= {"TKindNormal", "TKindOrder"} and {"TBW102", "%RETRY%GKind"}.isdisjoint(
            kinds(page))


@pytest.mark.timeout(60)
async def test_group_config_edit_skip_and_queue_allocation():
    from rocketpy.client import ClientConfig, ConsumeFromWhere, PushConsumer

    async with console() as (browser, cluster, producer):
        for i in range(4):
            await producer.send(make_message("TSkip", f"m{i}"))
        await browser.post("/groups/save", {"group": "GSkip", "back": "/groups"}, csrf_from="/groups")
        _, page = await browser.get("/group/GSkip")
        assert re.search(r'data-key="retryMaxTimes">16<', page) and re.search(r'data-key="consumeEnable">true<', page)
        status, page = await browser.post("/group/GSkip/config", {
            "consume_from_min_enable": "on", "consume_broadcast_enable": "on", "retry_queue_nums": "1",
            "retry_max_times": "3", "broker_id": "0", "which_broker_when_consume_slowly": "1",
            "notify_consumer_ids_changed_enable": "on", "broker": "broker-a", "back": "/group/GSkip"},
            csrf_from="/group/GSkip")  # consumeEnable left unticked
        assert "config of GSkip saved on broker-a" in page, _text(page)[:800]
        assert re.search(r'data-key="retryMaxTimes">3<', page) and re.search(r'data-key="consumeEnable">false<', page)
        async with Admin(cluster.namesrv) as admin:
            config = await admin.sub_group_config(cluster.broker_addr, "GSkip")
            assert config is not None and (config.retry_max_times, config.consume_enable) == (3, False)
            await admin.update_sub_group(cluster.broker_addr, SubscriptionGroupConfig(group_name="GSkip"))
            route = await admin.topic_route("TSkip")
            for mq in (await admin.topic_stats("TSkip")).offset_table:
                await admin.client.api.update_consumer_offset(route.broker_datas[0].master_addr(), "GSkip", mq, 0)
        _, page = await browser.get("/group/GSkip")
        assert re.search(r'id="group-lag">4<', page)
        _, page = await browser.get("/topic/TSkip")  # the topic's groups with their lag on it
        assert re.search(r'<tr data-group="GSkip">.*?<td class="n lag">4</td>', page, re.S), _text(page)[-500:]
        status, page = await browser.post("/group/GSkip/skip", {"topic": "TSkip", "back": "/group/GSkip"},
                                          csrf_from="/group/GSkip")
        assert "accumulated messages of TSkip skipped for GSkip" in page, _text(page)[:900]
        assert re.search(r'id="group-lag">0<', page)

        # an online client: every queue shows it, and the group list its version, type and model
        config = ClientConfig(namesrv_addr=cluster.namesrv, rebalance_interval=1.0, poll_name_server_interval=1.0)
        consumer = PushConsumer("GSkip", lambda msgs, ctx: None, config=config,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET)
        consumer.subscribe("TSkip", "*")
        async with consumer:
            client_id = consumer.client.client_id

            async def allocated() -> bool:
                nonlocal page
                page = (await browser.get("/group/GSkip"))[1]
                return len(re.findall(rf'<td class="client">{re.escape(client_id)}</td>', page)) >= 4

            await wait_until(allocated, timeout=15, tick=0.2)
            assert f'href="/client?group=GSkip&amp;id={quote(client_id)}"' in page
            _, page = await browser.get(f"/client?group=GSkip&id={quote(client_id)}")  # its running info
            assert 'data-key="PROP_CLIENT_VERSION">V4_9_8<' in page and page.count("<td>TSkip</td>") >= 5
            _, page = await browser.get("/groups")
            row = re.search(r'<tr data-group="GSkip">.*?</tr>', page, re.S).group(0)
            assert '<td class="version">V4_9_8</td>' in row and "CONSUME_PASSIVELY" in row and "CLUSTERING" in row


@pytest.mark.timeout(60)
async def test_dlq_messages_listed_exported_and_resent():
    from rocketpy.client import ClientConfig, ConsumeFromWhere, PushConsumer

    async with console() as (browser, cluster, producer):
        bodies = [b"dead one", "zwei \u00fc".encode(), b"\xff\x00"]
        ids = await _dead_letters(cluster, producer, "TDead", "GDead", bodies)
        _, page = await browser.get("/dlq?group=GDead")
        assert re.search(r'id="dlq-count">3<', page) and all(i in page for i in ids), _text(page)[-800:]
        assert page.count(">TDead<") == 3  # the origin topic
        _, page = await browser.get("/message?" + urlencode({"topic": "%DLQ%GDead", "id": ids[0]}))  # one opened
        assert "dead one" in page and "%DLQ%GDead" in page and 'id="error"' not in page, _text(page)[:600]
        status, headers, text = await browser.request("GET", "/dlq/export?group=GDead")
        assert status == 200 and headers["content-type"].startswith("text/csv")
        assert 'filename="dlq-GDead.csv"' in headers["content-disposition"]
        rows = list(csv.DictReader(io.StringIO(text)))
        assert sorted(r["msgId"] for r in rows) == sorted(ids)
        assert {r["body"] for r in rows} == {"dead one", "zwei \u00fc", "base64:/wA="}
        assert {r["topic"] for r in rows} == {"%DLQ%GDead"} and {r["originTopic"] for r in rows} == {"TDead"}
        _, _, text = await browser.request("GET", "/dlq/export?" + urlencode({"group": "GDead", "id": ids[0]}))
        assert [r["msgId"] for r in csv.DictReader(io.StringIO(text))] == [ids[0]]
        _, page = await browser.get("/dlq?group=GNoDeadLetters")
        assert re.search(r'id="dlq-count">0<', page)
        # no consumer online: a message, not a trace
        status, page = await browser.post("/dlq/resend", {"group": "GDead", "id": ids[0], "back": "/dlq?group=GDead"},
                                          csrf_from="/dlq?group=GDead")
        assert "no consumer of GDead is online" in page

        got: list[bytes] = []
        config = ClientConfig(namesrv_addr=cluster.namesrv, rebalance_interval=1.0, poll_name_server_interval=1.0)
        consumer = PushConsumer("GDead", lambda msgs, ctx: got.extend(m.body for m in msgs), config=config,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET)
        consumer.subscribe("TDeadIdle", "*")  # online in the group; what it subscribes to does not matter
        async with consumer:
            await wait_until(lambda: cluster.brokers[0].consumers.get("GDead") is not None, timeout=10, tick=0.05)
            status, page = await browser.post("/dlq/resend", {"group": "GDead", "id": ids[0],
                                                              "back": "/dlq?group=GDead"}, csrf_from="/dlq?group=GDead")
            assert f"resent {ids[0]}: CR_SUCCESS" in page, _text(page)[:600]
        assert got == [b"dead one"]
        # deleting the group takes its retry and DLQ topics with it (mqadmin's deleteSubGroup)
        _, page = await browser.get("/topics?type=RETRY&type=DLQ")
        assert "%RETRY%GDead" in page and "%DLQ%GDead" in page
        status, page = await browser.post("/group/GDead/delete", {"back": "/group/GDead"}, csrf_from="/group/GDead")
        assert "group GDead deleted with its retry and DLQ topics" in page, _text(page)[:600]
        _, page = await browser.get("/topics?type=RETRY&type=DLQ")
        assert "GDead" not in page
        _, page = await browser.get("/groups")
        assert "GDead" not in page.replace("group GDead deleted", "")


@pytest.mark.timeout(60)
async def test_broker_status_and_config_pages_show_every_key():
    async with console() as (browser, cluster, _producer):
        _, page = await browser.get("/")
        assert 'href="/broker/broker-a/0"' in page
        status, page = await browser.get("/broker/broker-a/0")
        async with Admin(cluster.namesrv) as admin:
            runtime = await admin.broker_runtime_info(cluster.broker_addr)
            config = await admin.broker_config(cluster.broker_addr)
        assert status == 200 and len(runtime) > 30 and len(config) > 100
        shown = dict(re.findall(r'<th>([^<]+)</th><td data-key="[^"]+">([^<]*)</td>', page))
        for key in ("brokerVersionDesc", "putTps", "msgPutTotalTodayNow", "commitLogDirCapacity"):
            assert key in shown, key
        assert set(runtime) | set(config) == set(shown)
        assert shown["brokerName"] == "broker-a" and shown["brokerVersionDesc"] == "V4_9_8"
        status, page = await browser.get("/broker/broker-z/0")  # only brokers of the cluster
        assert status == 200 and 'id="error"' in page and "no broker broker-z" in page


@pytest.mark.timeout(60)
async def test_namesrv_switcher_shows_another_cluster():
    from rocketpy.console.data import Clusters

    async with real_cluster(("broker-other",)) as other, real_cluster() as cluster:
        clusters = Clusters([cluster.namesrv, other.namesrv])
        try:
            browser = Browser(build_app(ConsoleSettings(namesrv=cluster.namesrv, other_namesrvs=[other.namesrv]),
                                        clusters))
            _, page = await browser.get("/")
            assert "broker-a" in page and "broker-other" not in page and 'id="namesrv-select"' in page
            status, page = await browser.post("/namesrv", {"namesrv": other.namesrv}, csrf_from="/")
            assert "broker-other" in page and ">broker-a<" not in page and f"<option selected>{other.namesrv}" in page
            _, page = await browser.get("/topics?system=1")
            assert "broker-other" in page  # every page follows the choice
            status, page = await browser.post("/namesrv", {"namesrv": "10.0.0.1:9876"}, csrf_from="/")
            assert "is not one of the console" in page  # only the configured clusters
            status, _, _ = await browser.request("POST", "/namesrv", {"namesrv": cluster.namesrv})
            assert status == 403  # no CSRF token
            status, _, text = await browser.request("GET", "/healthz")
            assert status == 200 and cluster.namesrv in text  # the default cluster
            _, _, text = await browser.request("GET", "/metrics")  # the default cluster, or ?namesrv=
            assert 'broker="broker-a"' in text and "broker-other" not in text
            _, _, text = await browser.request("GET", "/metrics?" + urlencode({"namesrv": other.namesrv}))
            assert 'broker="broker-other"' in text and 'broker="broker-a"' not in text
            status, _, _ = await browser.request("GET", "/metrics?namesrv=10.0.0.1:9876")
            assert status == 400
        finally:
            await clusters.aclose()


@pytest.mark.timeout(60)
async def test_group_list_filters_sorts_and_refreshes():
    async with console() as (browser, cluster, producer):
        for i in range(3):
            await producer.send(make_message("TSort", f"m{i}"))
        async with Admin(cluster.namesrv) as admin:
            for g in ("GSortA", "GSortB", "GSortC"):
                await admin.update_sub_group(cluster.broker_addr, SubscriptionGroupConfig(group_name=g))
            route = await admin.topic_route("TSort")
            mqs = sorted((await admin.topic_stats("TSort")).offset_table.items(), key=lambda kv: kv[0].queue_id)
            master = route.broker_datas[0].master_addr()
            first = next(mq for mq, bounds in mqs if bounds.max_offset > 0)
            for mq, bounds in mqs:  # GSortB behind by all 3, GSortA by 1, GSortC without offsets
                await admin.client.api.update_consumer_offset(master, "GSortB", mq, 0)
                await admin.client.api.update_consumer_offset(master, "GSortA", mq,
                                                              bounds.max_offset - (1 if mq == first else 0))

        def order(page: str) -> list[str]:
            return re.findall(r'<tr data-group="(GSort\w)">', page)

        _, page = await browser.get("/groups?q=gsort")  # the filter ignores case
        assert order(page) == ["GSortA", "GSortB", "GSortC"] and "TSort" not in page
        lags = dict(re.findall(r'<td class="n lag" data-group="(GSort\w)">(\d+)', page))
        assert (lags["GSortA"], lags["GSortB"]) == ("1", "3"), lags
        _, page = await browser.get("/groups?q=GSort&sort=lag")
        assert order(page) == ["GSortB", "GSortA", "GSortC"]
        _, page = await browser.get("/groups?q=GSortB")
        assert order(page) == ["GSortB"]
        _, page = await browser.get("/groups?q=GSort&refresh=10")
        assert '<meta http-equiv="refresh" content="10">' in page
        _, page = await browser.get("/groups?refresh=1")  # not faster than every 5 s
        assert 'http-equiv="refresh"' not in page


async def test_names_are_data_in_the_pages_never_markup_or_script():
    """A group named by a client (heartbeats create groups) cannot put markup or script in the pages: confirm()
    questions are escaped attributes read by one script, not script text with the name in it."""
    async with console() as (browser, _cluster, _producer):
        name = "G'x\"<b>"
        _, page = await browser.get(f"/group/{quote(name, safe='')}")
        assert 'data-confirm="Delete group G&#39;x&#34;&lt;b&gt;?"' in page
        assert name not in page and "<b>" not in page and "confirm('" not in page
