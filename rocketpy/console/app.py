"""The console's Starlette application: server-rendered pages over :class:`ConsoleData`.

Changes are POST forms carrying a CSRF token, answered by a redirect with a message;
a broker's error is shown as that message. With a users file every page needs a login
and only administrators (``,1``) may change anything; ``read_only`` refuses all changes.
Failed logins are throttled per address and per account; logging out and changing the
password end sessions server-side; cookies are ``Secure`` when the console is served over
TLS (or behind an ``https`` ``public_url``).
"""

from __future__ import annotations

import dataclasses
import datetime
import hmac
import logging
import math
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import trio
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from ..client.errors import MQClientError
from ..clock import now_ms
from ..codecs.bodies import SubscriptionGroupConfig
from ..codecs.bodies.register import PERM_READ_WRITE
from ..codecs.message import MessageExt
from . import metrics, metrics_cache
from .auth import (
    MIN_PASSWORD,
    SESSION_COOKIE,
    SESSION_SECONDS,
    LoginThrottle,
    Session,
    Sessions,
    User,
    check_new_password,
    replace_users,
    write_users_file,
)
from .data import (
    ADMIN_ERRORS,
    GROUP_CONFIG_FIELDS,
    KEY_QUERY_MAX,
    PAGE_SIZE,
    TOPIC_KINDS,
    Clusters,
    ConsoleData,
    body_views,
    client_version,
    export_csv,
)

log = logging.getLogger(__name__)
TEMPLATES = Path(__file__).parent / "templates"
PERMS = {"RW": PERM_READ_WRITE, "R": 4, "W": 2}
NAMESRV_COOKIE = "rocketpy_console_namesrv"  # the cluster this browser looks at (one of the configured ones)
HEALTH_TIMEOUT = 3.0  # seconds /healthz waits for the NameServer


@dataclasses.dataclass
class ConsoleSettings:
    namesrv: str
    read_only: bool = False
    users: dict[str, User] | None = None
    secret: bytes | None = None
    metrics_max_age: float = 10.0  # seconds a /metrics answer is reused
    #: more clusters to switch to (their NameServer lists), after ``namesrv``, the default
    other_namesrvs: list[str] = dataclasses.field(default_factory=list)
    #: the users file ``users`` came from: password changes are written there, and it is read again on change
    users_file: str | None = None
    #: the URL browsers reach the console at, when it is not the listen address (a reverse proxy, a DNS name):
    #: its host is answered to, its origin may post; an ``https`` one makes cookies Secure
    public_url: str | None = None
    tls_cert: str | None = None  # PEM certificate chain and key: served over HTTPS, cookies Secure
    tls_key: str | None = None
    login_throttle: LoginThrottle | None = None  # None: the default one (5 free failures, then 1 s, 2 s, 4 s...)

    @property
    def secure_cookies(self) -> bool:
        return bool(self.tls_cert) or (self.public_url or "").lower().startswith("https://")

    @property
    def namesrvs(self) -> list[str]:
        return list(dict.fromkeys([self.namesrv, *self.other_namesrvs]))


def _ts(ms: int) -> str:
    if not ms or ms < 0:
        return "-"
    return datetime.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def parse_local_time(text: str) -> int:
    """An ``<input type=datetime-local>`` value (local time) or epoch millis."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    for fmt in ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"):
        try:
            return int(datetime.datetime.strptime(text, fmt).timestamp() * 1000)
        except ValueError:
            continue
    raise ValueError(f"not a time: {text!r} (use YYYY-MM-DDTHH:MM or epoch millis)")


def build_app(settings: ConsoleSettings, source: ConsoleData | Clusters) -> Starlette:
    """``source``: one open cluster's data (with ``settings.other_namesrvs`` opened on first use), or
    :class:`Clusters`; every page shows the cluster the browser chose (NAMESRV_COOKIE), the first by default."""
    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=select_autoescape(["html"]))
    env.filters["ts"] = _ts
    env.filters["name"] = lambda v: "" if v is None else str(getattr(v, "name", v))
    env.filters["version"] = client_version
    sessions = Sessions(settings.secret)
    throttle = settings.login_throttle or LoginThrottle()
    secure = settings.secure_cookies

    def set_session(response: Response, cookie: str, name: str = SESSION_COOKIE) -> None:
        response.set_cookie(name, cookie, max_age=SESSION_SECONDS, httponly=True, samesite="strict", secure=secure)
    scrapes: dict[str, metrics_cache.MetricsCache] = {}  # one per cluster
    clusters = source if isinstance(source, Clusters) else Clusters.of(source, settings.other_namesrvs)
    choices = clusters.namesrvs

    def session_of(request: Request) -> Session | None:
        return sessions.read(request.cookies.get(SESSION_COOKIE))

    def chosen(request: Request) -> str:
        addr = request.cookies.get(NAMESRV_COOKIE, "")
        return addr if addr in choices else clusters.default

    async def data_of(request: Request) -> ConsoleData:
        return await clusters.get(chosen(request))

    def render(request: Request, name: str, session: Session, **ctx: Any) -> HTMLResponse:
        user = (settings.users or {}).get(session.user)
        can_change = not settings.read_only and (settings.users is None or (user is not None and user.admin))
        html = env.get_template(name).render(
            request=request, csrf=sessions.csrf_token(session), user=session.user, can_change=can_change,
            read_only=settings.read_only, msg=request.query_params.get("msg", ""),
            err=request.query_params.get("err", ""), namesrv=chosen(request), namesrvs=choices, **ctx)
        return HTMLResponse(html)

    def back_of(form: Any, default: str) -> str:
        """The form's page to go back to: a path of this console, never another site."""
        where = str(form.get("back") or default)
        return where if where.startswith("/") and not where.startswith("//") else default

    def back(path: str, **params: str) -> RedirectResponse:
        q = urlencode({k: v for k, v in params.items() if v})
        if not q:
            return RedirectResponse(path, status_code=303)
        return RedirectResponse(f"{path}{'&' if '?' in path else '?'}{q}", status_code=303)

    def page(fn: Callable[[Request, Session], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            session = session_of(request)
            fresh = None
            if settings.users is not None and (session is None or session.user not in settings.users):
                return back("/login", next=request.url.path)
            if session is None:
                fresh = sessions.issue()
                session = sessions.read(fresh)
                assert session is not None
            try:
                response = await fn(request, session)
            except ADMIN_ERRORS as exc:
                response = render(request, "error.html", session, error=str(exc))
            if fresh is not None:
                set_session(response, fresh)
            return response

        return endpoint

    def change(fn: Callable[[Request, Session, Any], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            session = session_of(request)
            form = await request.form()
            if not sessions.check_csrf(session, str(form.get("csrf") or "")):
                return HTMLResponse("CSRF token missing or wrong: reload the page", status_code=403)
            assert session is not None
            if settings.read_only:
                return HTMLResponse("the console is read-only", status_code=403)
            if settings.users is not None:
                user = settings.users.get(session.user)
                if user is None or not user.admin:
                    return HTMLResponse("only an administrator may change the cluster", status_code=403)
            where = back_of(form, "/")
            try:
                return await fn(request, session, form)
            except (*ADMIN_ERRORS, MQClientError) as exc:
                log.info("console change failed: %s", exc)
                return back(where, err=str(exc) or type(exc).__name__)

        return endpoint

    # -- pages -------------------------------------------------------------------------------------------
    @page
    async def cluster(request: Request, session: Session) -> Response:
        data = await data_of(request)
        return render(request, "cluster.html", session, brokers=await data.brokers(), page="cluster")

    async def cluster_json(request: Request) -> Response:
        if settings.users is not None and session_of(request) is None:
            return JSONResponse({"error": "login needed"}, status_code=401)
        try:
            rows = await (await data_of(request)).brokers()
        except ADMIN_ERRORS as exc:
            return JSONResponse({"error": str(exc)}, status_code=502)
        return JSONResponse({"time": now_ms(),
                             "brokers": [{"name": b.name, "id": b.broker_id, "addr": b.addr, "putTps": b.put_tps,
                                          "getTps": b.get_tps} for b in rows]})

    @page
    async def broker(request: Request, session: Session) -> Response:
        data = await data_of(request)
        name, bid = request.path_params["name"], request.path_params["id"]
        return render(request, "broker.html", session, b=await data.broker_view(name, bid), page="cluster")

    @page
    async def topics(request: Request, session: Session) -> Response:
        data = await data_of(request)
        p = request.query_params
        q = p.get("q", "")
        kinds = tuple(k for k in TOPIC_KINDS if k in p.getlist("type"))
        if not kinds:  # the default view (and the older ?system=1)
            kinds = ("NORMAL", "ORDER", "SYSTEM") if p.get("system") == "1" else ("NORMAL", "ORDER")
        page_no = int(p["page"]) if p.get("page", "").isdigit() else 1
        table = await data.topic_table(q, kinds, page_no)
        return render(request, "topics.html", session, t=table, q=q, kinds=kinds, all_kinds=TOPIC_KINDS,
                      page="topics")

    @page
    async def topic(request: Request, session: Session) -> Response:
        data = await data_of(request)
        name = request.path_params["name"]
        return render(request, "topic.html", session, topic=name, detail=await data.topic_detail(name),
                      now=datetime.datetime.now().strftime("%Y-%m-%dT%H:%M"), page="topics")

    @change
    async def topic_save(request: Request, session: Session, form: Any) -> Response:
        data = await data_of(request)
        name = str(form.get("topic") or "").strip()
        if not name:
            raise ValueError("the topic name is empty")
        await data.create_topic(name, int(form.get("read") or 8), int(form.get("write") or 8),
                                PERMS.get(str(form.get("perm") or "RW"), PERM_READ_WRITE), form.get("order") == "on")
        return back(f"/topic/{quote(name)}", msg=f"topic {name} saved")

    @change
    async def topic_delete(request: Request, session: Session, form: Any) -> Response:
        data = await data_of(request)
        name = request.path_params["name"]
        await data.delete_topic(name)
        return back("/topics", msg=f"topic {name} deleted")

    @change
    async def topic_send(request: Request, session: Session, form: Any) -> Response:
        name = request.path_params["name"]
        result = await (await data_of(request)).send(name, str(form.get("body") or "").encode(),
                                                     str(form.get("tags") or ""), str(form.get("keys") or ""))
        return back(f"/topic/{quote(name)}", msg=f"sent: {result.send_status.name} msgId={result.msg_id} "
                                          f"offsetMsgId={result.offset_msg_id}")

    @page
    async def groups(request: Request, session: Session) -> Response:
        data = await data_of(request)
        p = request.query_params
        system, q, sort = p.get("system") == "1", p.get("q", ""), p.get("sort", "group")
        refresh = int(p["refresh"]) if p.get("refresh", "").isdigit() and int(p["refresh"]) >= 5 else 0
        return render(request, "groups.html", session, groups=await data.groups(system, text=q, sort=sort),
                      system=system, q=q, sort=sort, refresh=refresh, page="groups")

    @page
    async def group(request: Request, session: Session) -> Response:
        data = await data_of(request)
        name = request.path_params["name"]
        return render(request, "group.html", session, d=await data.group_detail(name), page="groups",
                      now=datetime.datetime.now().strftime("%Y-%m-%dT%H:%M"), config_fields=GROUP_CONFIG_FIELDS,
                      defaults=SubscriptionGroupConfig())

    @page
    async def client(request: Request, session: Session) -> Response:
        data = await data_of(request)
        group, client_id = request.query_params.get("group", ""), request.query_params.get("id", "")
        info = await data.client_info(group, client_id)
        mqs = sorted(info.mq_table.items(), key=lambda kv: (kv[0].topic or "", kv[0].broker_name or "",
                                                            kv[0].queue_id))
        return render(request, "client.html", session, group=group, client_id=client_id, info=info, mqs=mqs,
                      page="groups")

    @change
    async def group_save(request: Request, session: Session, form: Any) -> Response:
        data = await data_of(request)
        name = str(form.get("group") or "").strip()
        if not name:
            raise ValueError("the group name is empty")
        await data.create_group(name)
        return back(f"/group/{quote(name)}", msg=f"group {name} saved")

    @change
    async def group_delete(request: Request, session: Session, form: Any) -> Response:
        data = await data_of(request)
        name = request.path_params["name"]
        left = await data.delete_group(name)
        if left:
            return back("/groups", err=f"group {name} deleted; not deleted: {'; '.join(left)}")
        return back("/groups", msg=f"group {name} deleted with its retry and DLQ topics")

    @change
    async def group_config(request: Request, session: Session, form: Any) -> Response:
        data = await data_of(request)
        name = request.path_params["name"]
        values: dict[str, Any] = {"group_name": name}
        for field, label, kind in GROUP_CONFIG_FIELDS:
            if kind == "bool":
                values[field] = form.get(field) == "on"
            else:
                text = str(form.get(field) or "").strip()
                if not text.lstrip("-").isdigit():
                    raise ValueError(f"{label} wants a whole number, got {text!r}")
                values[field] = int(text)
        brokers = [str(b) for b in form.getlist("broker")]
        done = await data.update_group_config(SubscriptionGroupConfig(**values), brokers)
        return back(f"/group/{quote(name)}", msg=f"config of {name} saved on {', '.join(done)}")

    @change
    async def group_skip(request: Request, session: Session, form: Any) -> Response:
        data = await data_of(request)
        name = request.path_params["name"]
        topic = str(form.get("topic") or "").strip()
        if not topic:
            raise ValueError("no topic given")
        table = await data.reset_offset(name, topic, -1)
        return back(back_of(form, f"/group/{quote(name)}"),
                    msg=f"accumulated messages of {topic} skipped for {name}: {len(table)} queues at their end")

    @change
    async def group_reset(request: Request, session: Session, form: Any) -> Response:
        data = await data_of(request)
        name = request.path_params["name"]
        topic = str(form.get("topic") or "").strip()
        when = parse_local_time(str(form.get("time") or ""))
        table = await data.reset_offset(name, topic, when)
        moved = ", ".join(f"{mq.broker_name}:{mq.queue_id}={off}" for mq, off in sorted(
            table.items(), key=lambda kv: (kv[0].broker_name or "", kv[0].queue_id)))
        text = f"offsets of {topic} for {name} reset to {_ts(when)}: {moved or 'nothing to move'}"
        return back(back_of(form, f"/group/{quote(name)}"), msg=text)

    @page
    async def messages(request: Request, session: Session) -> Response:
        data = await data_of(request)
        p = request.query_params
        topic, key, msg_id = p.get("topic", "").strip(), p.get("key", "").strip(), p.get("id", "").strip()
        found: list[MessageExt] = []
        searched = cut = older = ""
        if topic and key:
            found, searched = await data.by_key(topic, key), f"key {key}"
            if len(found) >= KEY_QUERY_MAX:
                cut = f"cut at {KEY_QUERY_MAX} messages: a query by key returns at most {KEY_QUERY_MAX}"
        elif msg_id:
            found, searched = [await data.by_id(topic, msg_id)], f"id {msg_id}"
        elif topic:
            end = parse_local_time(p["end"]) if p.get("end") else now_ms()
            begin = parse_local_time(p["begin"]) if p.get("begin") else end - 3600_000
            browsed = await data.by_time(topic, begin, end)
            found, searched = browsed.messages, f"{_ts(begin)} .. {_ts(end)}"
            if browsed.cut:
                cut = (f"cut at {browsed.cap} messages: it holds every message stored after {_ts(browsed.since)}, "
                       "none of the older ones")
                older = "/messages?" + urlencode({"topic": topic, "begin": begin, "end": browsed.since})
        pages = max(1, -(-len(found) // PAGE_SIZE))
        wanted = p.get("page", "1").strip()
        number = min(max(int(wanted) if wanted.isdigit() else 1, 1), pages)
        query = {k: v for k in ("topic", "key", "id", "begin", "end") if (v := p.get(k, "").strip())}

        def page_link(n: int) -> str:
            return "/messages?" + urlencode({**query, "page": n}) if 1 <= n <= pages and n != number else ""

        return render(request, "messages.html", session, found=found[(number - 1) * PAGE_SIZE:number * PAGE_SIZE],
                      total=len(found), searched=searched, cut=cut, older=older, page_number=number, pages=pages,
                      page_size=PAGE_SIZE, previous_page=page_link(number - 1), next_page=page_link(number + 1),
                      first_shown=(number - 1) * PAGE_SIZE + 1, topic=topic, key=key, msg_id=msg_id,
                      begin=p.get("begin", ""), end=p.get("end", ""), page="messages")

    @page
    async def message(request: Request, session: Session) -> Response:
        data = await data_of(request)
        p = request.query_params
        msg = await data.by_id(p.get("topic", ""), p.get("id", ""))
        return render(request, "message.html", session, m=msg, views=body_views(msg.body),
                      consumed=await data.consumed_by(msg), page="messages", topic=p.get("topic", ""))

    @change
    async def message_resend(request: Request, session: Session, form: Any) -> Response:
        data = await data_of(request)
        topic, msg_id = str(form.get("topic") or ""), str(form.get("id") or "")
        group, client = str(form.get("group") or ""), str(form.get("client") or "")
        msg = await data.by_id(topic, msg_id)
        result = await data.consume_directly(group, client, msg)
        status = result.consume_result.name if result.consume_result is not None else "?"
        return back("/message", topic=topic, id=msg_id, msg=f"consumed by {client}: {status} {result.remark or ''}")

    def dlq_range(request: Request) -> tuple[str, int, int]:
        p = request.query_params
        end = parse_local_time(p["end"]) if p.get("end") else now_ms()
        begin = parse_local_time(p["begin"]) if p.get("begin") else end - 24 * 3600_000
        return p.get("group", "").strip(), begin, end

    @page
    async def dlq(request: Request, session: Session) -> Response:
        data = await data_of(request)
        group, begin, end = dlq_range(request)
        browsed = await data.dlq_messages(group, begin, end) if group else None
        found = browsed.messages if browsed is not None else []
        cut = (f"cut at {browsed.cap} messages: it holds those stored after {_ts(browsed.since)}"
               if browsed and browsed.cut else "")
        return render(request, "dlq.html", session, group=group, found=found, searched=bool(group), cut=cut,
                      begin=request.query_params.get("begin", ""), end=request.query_params.get("end", ""),
                      span=f"{_ts(begin)} .. {_ts(end)}", page="dlq",
                      query=urlencode({k: v for k in ("group", "begin", "end") if (v := request.query_params.get(k))}))

    @page
    async def dlq_export(request: Request, session: Session) -> Response:
        data = await data_of(request)
        group, begin, end = dlq_range(request)
        if not group:
            raise ValueError("no consumer group given")
        found = (await data.dlq_messages(group, begin, end)).messages
        wanted = set(request.query_params.getlist("id"))
        if wanted:
            found = [m for m in found if (m.uniq_key or m.msg_id) in wanted]
        name = "".join(c if c.isalnum() or c in "-_" else "_" for c in group)
        return Response(export_csv(found), media_type="text/csv; charset=utf-8",
                        headers={"content-disposition": f'attachment; filename="dlq-{name}.csv"'})

    @change
    async def dlq_resend(request: Request, session: Session, form: Any) -> Response:
        data = await data_of(request)
        group = str(form.get("group") or "").strip()
        ids = [str(i) for i in form.getlist("id")]
        if not group or not ids:
            raise ValueError("choose the messages to resend")
        results = await data.resend_dlq(group, ids, str(form.get("client") or "").strip())
        text = "; ".join(f"{i}: {r}" for i, r in results)
        failed = any(r.startswith("failed") for _, r in results)
        return back(back_of(form, "/dlq"), **{"err" if failed else "msg": f"resent {text}"})

    @page
    async def trace(request: Request, session: Session) -> Response:
        data = await data_of(request)
        msg_id = request.query_params.get("id", "").strip()
        records = await data.trace(msg_id) if msg_id else []
        start = min((r.timestamp for r in records if r.timestamp), default=0)
        return render(request, "trace.html", session, msg_id=msg_id, records=records, start=start, page="trace")

    @page
    async def producers(request: Request, session: Session) -> Response:
        data = await data_of(request)
        group, topic = request.query_params.get("group", ""), request.query_params.get("topic", "")
        conn, error = None, ""
        if group and topic:
            try:
                conn = await data.producers(group, topic)
            except ADMIN_ERRORS as exc:  # Java's brokers answer an error when no producer of the group is online
                error = str(exc)
        return render(request, "producers.html", session, group=group, topic=topic, conn=conn, error=error,
                      page="producers")

    @page
    async def acl(request: Request, session: Session) -> Response:
        data = await data_of(request)
        return render(request, "acl.html", session, rows=await data.acl(), page="acl")

    async def metrics_endpoint(request: Request) -> Response:
        if settings.users is not None and session_of(request) is None:
            return Response("login needed", status_code=401)
        addr = request.query_params.get("namesrv", clusters.default)  # ?namesrv= for the other clusters
        if addr not in choices:
            return Response(f"# {addr} is not one of the console's NameServers\n", status_code=400,
                            media_type=metrics.CONTENT_TYPE)
        scrape = scrapes.setdefault(addr, metrics_cache.MetricsCache(settings.metrics_max_age))
        try:
            return Response(await scrape.get(await clusters.get(addr)), media_type=metrics.CONTENT_TYPE)
        except ADMIN_ERRORS as exc:
            return Response(f"# cannot reach the cluster: {exc}\n", status_code=502, media_type=metrics.CONTENT_TYPE)

    async def healthz(request: Request) -> Response:
        """For orchestrators (no login): 200 when the default cluster's NameServer answers GET_BROKER_CLUSTER_INFO
        within HEALTH_TIMEOUT, 503 otherwise; the body says what was checked."""
        checked = {"check": "GET_BROKER_CLUSTER_INFO", "namesrv": clusters.default}
        try:
            with trio.fail_after(HEALTH_TIMEOUT):
                found = await (await clusters.get()).health()
        except ADMIN_ERRORS as exc:
            return JSONResponse({"status": "DOWN", **checked, "error": str(exc) or type(exc).__name__},
                                status_code=503)
        return JSONResponse({"status": "UP", **checked, "brokers": found["brokers"]})

    async def switch_namesrv(request: Request) -> Response:
        """Look at another configured cluster (this browser only): a POST with the CSRF token, no admin needed,
        since it changes nothing in any cluster."""
        session = session_of(request)
        form = await request.form()
        if settings.users is not None and (session is None or session.user not in settings.users):
            return HTMLResponse("login needed", status_code=403)
        if not sessions.check_csrf(session, str(form.get("csrf") or "")):
            return HTMLResponse("CSRF token missing or wrong: reload the page", status_code=403)
        addr = str(form.get("namesrv") or "")
        if addr not in choices:
            return back("/", err=f"{addr} is not one of the console's NameServers")
        response = back("/", msg=f"now showing the cluster of NameServer {addr}")
        set_session(response, addr, NAMESRV_COOKIE)
        return response

    def client_addr(request: Request) -> str:
        return request.client.host if request.client else "?"

    def throttled(request: Request, name: str) -> float:
        """Seconds until ``name`` may try a password from this address (0: now)."""
        return throttle.wait(client_addr(request), name)

    def wrong_password(request: Request, name: str, where: str) -> None:
        count, wait = throttle.failed(client_addr(request), name)
        log.warning("console %s failed: wrong password for user %r from %s (%d in a row%s)", where, name[:64],
                    client_addr(request), count, f"; the next attempt waits {wait:.0f} s" if wait else "")

    def too_many(wait: float) -> str:
        return f"too many wrong passwords: try again in {math.ceil(wait)} s"

    async def login(request: Request) -> Response:
        nxt = request.query_params.get("next", "/")
        error, status, headers = "", 200, {}
        if request.method == "POST":
            form = await request.form()
            name, password = str(form.get("user") or ""), str(form.get("password") or "")
            user = (settings.users or {}).get(name)
            # no await between the throttle's check and its count: parallel guesses are counted one by one
            wait = throttled(request, name)
            if wait > 0:  # refused without looking at the password
                error, status, headers = too_many(wait), 429, {"retry-after": str(math.ceil(wait))}
            elif user is not None and hmac.compare_digest(user.password.encode(), password.encode()):
                throttle.succeeded(name)
                where = nxt if nxt.startswith("/") and not nxt.startswith("//") else "/"
                response = RedirectResponse(where, status_code=303)
                set_session(response, sessions.issue(name))
                return response
            else:
                wrong_password(request, name, "login")
                error, status = "wrong user or password", 401
        html = env.get_template("login.html").render(next=nxt, error=error, namesrv=settings.namesrv)
        return HTMLResponse(html, status_code=status, headers=headers)

    async def logout(request: Request) -> Response:
        """Ends the session server-side (its cookie no longer works anywhere), then forgets the cookie."""
        session = session_of(request)
        form = await request.form()
        if session is not None and session.user:
            if not sessions.check_csrf(session, str(form.get("csrf") or "")):
                return HTMLResponse("CSRF token missing or wrong: reload the page", status_code=403)
            sessions.end(session)
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE, httponly=True, samesite="strict", secure=secure)
        return response

    async def password(request: Request) -> Response:
        """A user changes their own password: the current one (throttled like a login), the new one twice. The
        users file is rewritten, every session of the user ends, and this browser gets a new one."""
        if settings.users is None:
            return HTMLResponse("this console has no users file, so no passwords", status_code=404)
        session = session_of(request)
        if session is None or session.user not in settings.users:
            return back("/login", next="/password")

        def form_page(error: str = "", status: int = 200) -> Response:
            assert session is not None
            response = render(request, "password.html", session, page="password", error=error,
                              min_length=MIN_PASSWORD)
            response.status_code = status
            return response

        if request.method == "GET":
            return form_page()
        form = await request.form()
        if not sessions.check_csrf(session, str(form.get("csrf") or "")):
            return HTMLResponse("CSRF token missing or wrong: reload the page", status_code=403)
        user = settings.users[session.user]
        current, new = str(form.get("current") or ""), str(form.get("new") or "")
        wait = throttled(request, user.name)
        if wait > 0:
            return form_page(too_many(wait), 429)
        if not hmac.compare_digest(user.password.encode(), current.encode()):
            wrong_password(request, user.name, "password change")
            return form_page("the current password is wrong", 403)
        throttle.succeeded(user.name)
        if new != str(form.get("again") or ""):
            return form_page("the two new passwords differ", 400)
        try:
            check_new_password(new)
            if settings.users_file:
                await trio.to_thread.run_sync(write_users_file, settings.users_file, user.name, new)
        except ValueError as exc:
            return form_page(str(exc), 400)
        except OSError as exc:
            log.warning("console: cannot write the users file for %r's new password: %s", user.name, exc)
            return form_page(f"cannot write the users file: {exc.strerror or exc}", 500)
        new_users = dict(settings.users)
        new_users[user.name] = User(user.name, new, user.admin)
        replace_users(settings.users, new_users, sessions)
        log.info("console: user %r changed their password from %s; their other sessions ended", user.name,
                 client_addr(request))
        response = back("/", msg="password changed: your other sessions have ended")
        set_session(response, sessions.issue(user.name))
        return response

    routes = [
        Route("/", cluster),
        Route("/healthz", healthz),
        Route("/namesrv", switch_namesrv, methods=["POST"]),
        Route("/broker/{name}/{id:int}", broker),
        Route("/api/cluster", cluster_json),
        Route("/topics", topics),
        Route("/topics/save", topic_save, methods=["POST"]),
        Route("/topic/{name:path}/delete", topic_delete, methods=["POST"]),
        Route("/topic/{name:path}/send", topic_send, methods=["POST"]),
        Route("/topic/{name:path}", topic),
        Route("/groups", groups),
        Route("/client", client),
        Route("/groups/save", group_save, methods=["POST"]),
        Route("/group/{name:path}/delete", group_delete, methods=["POST"]),
        Route("/group/{name:path}/reset", group_reset, methods=["POST"]),
        Route("/group/{name:path}/config", group_config, methods=["POST"]),
        Route("/group/{name:path}/skip", group_skip, methods=["POST"]),
        Route("/group/{name:path}", group),
        Route("/messages", messages),
        Route("/message", message),
        Route("/message/resend", message_resend, methods=["POST"]),
        Route("/dlq", dlq),
        Route("/dlq/export", dlq_export),
        Route("/dlq/resend", dlq_resend, methods=["POST"]),
        Route("/trace", trace),
        Route("/producers", producers),
        Route("/acl", acl),
        Route("/metrics", metrics_endpoint),
        Route("/login", login, methods=["GET", "POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/password", password, methods=["GET", "POST"]),
    ]
    app = Starlette(routes=routes)
    app.state.sessions = sessions  # for the server's reload of the users file (auth.replace_users)
    return app
