"""The console's Starlette application: server-rendered pages over :class:`ConsoleData`.

Changes are POST forms carrying a CSRF token, answered by a redirect with a message;
a broker's error is shown as that message. With a users file every page needs a login
and only administrators (``,1``) may change anything; ``read_only`` refuses all changes.
"""

from __future__ import annotations

import dataclasses
import datetime
import hmac
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from ..client.errors import MQClientError
from ..clock import now_ms
from ..codecs.bodies.register import PERM_READ_WRITE
from ..codecs.message import MessageExt
from . import metrics
from .auth import SESSION_COOKIE, SESSION_SECONDS, Session, Sessions, User
from .data import ADMIN_ERRORS, ConsoleData, body_views

log = logging.getLogger(__name__)
TEMPLATES = Path(__file__).parent / "templates"
PERMS = {"RW": PERM_READ_WRITE, "R": 4, "W": 2}


@dataclasses.dataclass
class ConsoleSettings:
    namesrv: str
    read_only: bool = False
    users: dict[str, User] | None = None
    secret: bytes | None = None
    metrics_max_age: float = 10.0  # seconds a /metrics answer is reused


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


def build_app(settings: ConsoleSettings, data: ConsoleData,
              send: Callable[[str, bytes, str, str], Awaitable[Any]] | None = None) -> Starlette:
    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=select_autoescape(["html"]))
    env.filters["ts"] = _ts
    env.filters["name"] = lambda v: "" if v is None else str(getattr(v, "name", v))
    sessions = Sessions(settings.secret)
    scrape = metrics.MetricsCache(settings.metrics_max_age)

    def session_of(request: Request) -> Session | None:
        return sessions.read(request.cookies.get(SESSION_COOKIE))

    def render(request: Request, name: str, session: Session, **ctx: Any) -> HTMLResponse:
        user = (settings.users or {}).get(session.user)
        can_change = not settings.read_only and (settings.users is None or (user is not None and user.admin))
        html = env.get_template(name).render(
            request=request, csrf=sessions.csrf_token(session), user=session.user, can_change=can_change,
            read_only=settings.read_only, msg=request.query_params.get("msg", ""),
            err=request.query_params.get("err", ""), namesrv=settings.namesrv, **ctx)
        return HTMLResponse(html)

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
                response.set_cookie(SESSION_COOKIE, fresh, max_age=SESSION_SECONDS, httponly=True, samesite="strict")
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
            where = str(form.get("back") or "/")
            if not where.startswith("/") or where.startswith("//"):
                where = "/"
            try:
                return await fn(request, session, form)
            except (*ADMIN_ERRORS, MQClientError) as exc:
                log.info("console change failed: %s", exc)
                return back(where, err=str(exc) or type(exc).__name__)

        return endpoint

    # -- pages -------------------------------------------------------------------------------------------
    @page
    async def cluster(request: Request, session: Session) -> Response:
        return render(request, "cluster.html", session, brokers=await data.brokers(), page="cluster")

    async def cluster_json(request: Request) -> Response:
        if settings.users is not None and session_of(request) is None:
            return JSONResponse({"error": "login needed"}, status_code=401)
        try:
            rows = await data.brokers()
        except ADMIN_ERRORS as exc:
            return JSONResponse({"error": str(exc)}, status_code=502)
        return JSONResponse({"time": now_ms(),
                             "brokers": [{"name": b.name, "id": b.broker_id, "addr": b.addr, "putTps": b.put_tps,
                                          "getTps": b.get_tps} for b in rows]})

    @page
    async def topics(request: Request, session: Session) -> Response:
        q = request.query_params.get("q", "")
        system = request.query_params.get("system") == "1"
        return render(request, "topics.html", session, topics=await data.topics(q, system), q=q, system=system,
                      page="topics")

    @page
    async def topic(request: Request, session: Session) -> Response:
        name = request.path_params["name"]
        return render(request, "topic.html", session, topic=name, detail=await data.topic_detail(name),
                      page="topics")

    @change
    async def topic_save(request: Request, session: Session, form: Any) -> Response:
        name = str(form.get("topic") or "").strip()
        if not name:
            raise ValueError("the topic name is empty")
        await data.create_topic(name, int(form.get("read") or 8), int(form.get("write") or 8),
                                PERMS.get(str(form.get("perm") or "RW"), PERM_READ_WRITE), form.get("order") == "on")
        return back(f"/topic/{quote(name)}", msg=f"topic {name} saved")

    @change
    async def topic_delete(request: Request, session: Session, form: Any) -> Response:
        name = request.path_params["name"]
        await data.delete_topic(name)
        return back("/topics", msg=f"topic {name} deleted")

    @change
    async def topic_send(request: Request, session: Session, form: Any) -> Response:
        name = request.path_params["name"]
        if send is None:
            raise MQClientError("sending is not available")
        result = await send(name, str(form.get("body") or "").encode(), str(form.get("tags") or ""),
                            str(form.get("keys") or ""))
        return back(f"/topic/{quote(name)}", msg=f"sent: {result.send_status.name} msgId={result.msg_id} "
                                          f"offsetMsgId={result.offset_msg_id}")

    @page
    async def groups(request: Request, session: Session) -> Response:
        system = request.query_params.get("system") == "1"
        return render(request, "groups.html", session, groups=await data.groups(system), system=system,
                      page="groups")

    @page
    async def group(request: Request, session: Session) -> Response:
        name = request.path_params["name"]
        return render(request, "group.html", session, d=await data.group_detail(name), page="groups",
                      now=datetime.datetime.now().strftime("%Y-%m-%dT%H:%M"))

    @change
    async def group_save(request: Request, session: Session, form: Any) -> Response:
        name = str(form.get("group") or "").strip()
        if not name:
            raise ValueError("the group name is empty")
        await data.create_group(name)
        return back(f"/group/{quote(name)}", msg=f"group {name} saved")

    @change
    async def group_delete(request: Request, session: Session, form: Any) -> Response:
        name = request.path_params["name"]
        await data.delete_group(name)
        return back("/groups", msg=f"group {name} deleted")

    @change
    async def group_reset(request: Request, session: Session, form: Any) -> Response:
        name = request.path_params["name"]
        topic = str(form.get("topic") or "").strip()
        when = parse_local_time(str(form.get("time") or ""))
        table = await data.reset_offset(name, topic, when)
        moved = ", ".join(f"{mq.broker_name}:{mq.queue_id}={off}" for mq, off in sorted(
            table.items(), key=lambda kv: (kv[0].broker_name or "", kv[0].queue_id)))
        text = f"offsets of {topic} reset to {_ts(when)}: {moved or 'nothing to move'}"
        return back(f"/group/{quote(name)}", msg=text)

    @page
    async def messages(request: Request, session: Session) -> Response:
        p = request.query_params
        topic, key, msg_id = p.get("topic", "").strip(), p.get("key", "").strip(), p.get("id", "").strip()
        found: list[MessageExt] = []
        searched = ""
        if topic and key:
            found, searched = await data.by_key(topic, key), f"key {key}"
        elif msg_id:
            found, searched = [await data.by_id(topic, msg_id)], f"id {msg_id}"
        elif topic:
            end = parse_local_time(p["end"]) if p.get("end") else now_ms()
            begin = parse_local_time(p["begin"]) if p.get("begin") else end - 3600_000
            found, searched = await data.by_time(topic, begin, end), f"{_ts(begin)} .. {_ts(end)}"
        return render(request, "messages.html", session, found=found, searched=searched, topic=topic, key=key,
                      msg_id=msg_id, begin=p.get("begin", ""), end=p.get("end", ""), page="messages")

    @page
    async def message(request: Request, session: Session) -> Response:
        p = request.query_params
        msg = await data.by_id(p.get("topic", ""), p.get("id", ""))
        return render(request, "message.html", session, m=msg, views=body_views(msg.body),
                      consumed=await data.consumed_by(msg), page="messages", topic=p.get("topic", ""))

    @change
    async def message_resend(request: Request, session: Session, form: Any) -> Response:
        topic, msg_id = str(form.get("topic") or ""), str(form.get("id") or "")
        group, client = str(form.get("group") or ""), str(form.get("client") or "")
        msg = await data.by_id(topic, msg_id)
        result = await data.consume_directly(group, client, msg)
        status = result.consume_result.name if result.consume_result is not None else "?"
        return back("/message", topic=topic, id=msg_id, msg=f"consumed by {client}: {status} {result.remark or ''}")

    @page
    async def trace(request: Request, session: Session) -> Response:
        msg_id = request.query_params.get("id", "").strip()
        records = await data.trace(msg_id) if msg_id else []
        start = min((r.timestamp for r in records if r.timestamp), default=0)
        return render(request, "trace.html", session, msg_id=msg_id, records=records, start=start, page="trace")

    @page
    async def producers(request: Request, session: Session) -> Response:
        group, topic = request.query_params.get("group", ""), request.query_params.get("topic", "")
        conn = await data.producers(group, topic) if group and topic else None
        return render(request, "producers.html", session, group=group, topic=topic, conn=conn, page="producers")

    @page
    async def acl(request: Request, session: Session) -> Response:
        return render(request, "acl.html", session, rows=await data.acl(), page="acl")

    async def metrics_endpoint(request: Request) -> Response:
        if settings.users is not None and session_of(request) is None:
            return Response("login needed", status_code=401)
        try:
            return Response(await scrape.get(data), media_type=metrics.CONTENT_TYPE)
        except ADMIN_ERRORS as exc:
            return Response(f"# cannot reach the cluster: {exc}\n", status_code=502, media_type=metrics.CONTENT_TYPE)

    async def login(request: Request) -> Response:
        nxt = request.query_params.get("next", "/")
        error = ""
        if request.method == "POST":
            form = await request.form()
            name, password = str(form.get("user") or ""), str(form.get("password") or "")
            user = (settings.users or {}).get(name)
            if user is not None and hmac.compare_digest(user.password.encode(), password.encode()):
                where = nxt if nxt.startswith("/") and not nxt.startswith("//") else "/"
                response = RedirectResponse(where, status_code=303)
                response.set_cookie(SESSION_COOKIE, sessions.issue(name), max_age=SESSION_SECONDS, httponly=True,
                                    samesite="strict")
                return response
            error = "wrong user or password"
        html = env.get_template("login.html").render(next=nxt, error=error, namesrv=settings.namesrv)
        return HTMLResponse(html, status_code=401 if error else 200)

    async def logout(request: Request) -> Response:
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE)
        return response

    routes = [
        Route("/", cluster),
        Route("/api/cluster", cluster_json),
        Route("/topics", topics),
        Route("/topics/save", topic_save, methods=["POST"]),
        Route("/topic/{name:path}/delete", topic_delete, methods=["POST"]),
        Route("/topic/{name:path}/send", topic_send, methods=["POST"]),
        Route("/topic/{name:path}", topic),
        Route("/groups", groups),
        Route("/groups/save", group_save, methods=["POST"]),
        Route("/group/{name:path}/delete", group_delete, methods=["POST"]),
        Route("/group/{name:path}/reset", group_reset, methods=["POST"]),
        Route("/group/{name:path}", group),
        Route("/messages", messages),
        Route("/message", message),
        Route("/message/resend", message_resend, methods=["POST"]),
        Route("/trace", trace),
        Route("/producers", producers),
        Route("/acl", acl),
        Route("/metrics", metrics_endpoint),
        Route("/login", login, methods=["GET", "POST"]),
        Route("/logout", logout, methods=["POST"]),
    ]
    return Starlette(routes=routes)
