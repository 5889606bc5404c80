"""Where a request's time goes: the session page's opening requests, phase by phase, in one process.

Each request goes through Django's production WSGI handler with every middleware, as a server would call
it, one at a time (so the numbers are CPU and round trips, not queueing). Timers wrap the phases: the
framework and middleware around the view, authentication, the access check, SQL (Django's execute
wrapper), Redis (the shared cache), rendering (JSON and templates), and the rest of the view. Times are
exclusive: a query inside the access check counts as SQL, not as access.

The same opening is then made again with the copies the first one returned (If-None-Match), as a
browser revisiting the session does.
"""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

from bench.django_env import bench_user
from bench.metrics import Context, Result, at_most, metric
from bench.metrics.db import require_db, session_pk
from bench.metrics.serve import bench_token

ROUNDS = 60
PHASES = ("framework", "auth", "access", "sql", "redis", "render", "view")


class _Clock:
    """Exclusive time per phase: a phase's own time, less the phases timed inside it."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)
        self._stack: list[list[float]] = []  # per open phase: [time spent in nested phases]

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        self._stack.append([0.0])
        t0 = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - t0
            nested = self._stack.pop()[0]
            self.spent[name] += elapsed - nested
            if self._stack:
                self._stack[-1][0] += elapsed

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            with self.phase(name):
                return fn(*args, **kwargs)

        return timed


@contextlib.contextmanager
def _instrumented(clock: _Clock) -> Iterator[None]:
    """Patch the phases' entry points with timers for the duration of the block."""
    from django.core.cache import caches
    from django.db import connection
    from django.template.backends.django import Template
    from rest_framework.renderers import JSONRenderer
    from rest_framework.views import APIView

    from sessions_app import access

    cache = caches["shared"]
    patches: list[tuple[Any, str, Any]] = [
        (APIView, "perform_authentication", APIView.perform_authentication),
        (access, "resolve_access", access.resolve_access),
        (JSONRenderer, "render", JSONRenderer.render),
        (Template, "render", Template.render),
        (APIView, "dispatch", APIView.dispatch),
    ]
    names = {"perform_authentication": "auth", "resolve_access": "access", "dispatch": "view"}
    for owner, attr, original in patches:
        setattr(owner, attr, clock.wrap(names.get(attr, "render"), original))
    cache_patches = [(attr, getattr(cache, attr)) for attr in ("get", "get_many", "set", "add")]
    for attr, original in cache_patches:
        setattr(cache, attr, clock.wrap("redis", original))

    def sql(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        with clock.phase("sql"):
            return execute(sql, params, many, context)

    try:
        with connection.execute_wrapper(sql):
            yield
    finally:
        for owner, attr, original in patches:
            setattr(owner, attr, original)
        for attr, _ in cache_patches:
            with contextlib.suppress(AttributeError):
                delattr(cache, attr)  # back to the class's methods


def _requests(
    pk: int, leaf: str, ids: list[str], token: str, cookie: str
) -> list[tuple[str, str, dict[str, str]]]:
    """The page's opening requests as the team day makes them: (kind, path with query, headers)."""
    api = {"HTTP_AUTHORIZATION": f"Token {token}", "HTTP_ACCEPT": "application/json"}
    base = f"/api/sessions/{pk}"
    return [
        ("page", f"/sessions/{pk}/", {"HTTP_COOKIE": cookie}),
        ("tree", f"{base}/tree/", api),
        ("path", f"{base}/path/?leaf={leaf}&limit=12&render=1", api),
        ("context", f"{base}/context/?leaf={leaf}&head=10&tail=40&llm=false&render=20", api),
        ("comment counts", f"{base}/comments/?entries={','.join(ids)}", api),
        ("threads", f"{base}/comments/?entryId={leaf}", api),
        ("cost", f"{base}/cost/?at={leaf}&entries={','.join(ids[-3:])}", api),
    ]


def _environ(route: str, query: str, headers: dict[str, str]) -> dict[str, Any]:
    import io

    return {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": route,
        "QUERY_STRING": query,
        "SCRIPT_NAME": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "127.0.0.1",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(),
        "wsgi.errors": io.StringIO(),
        "wsgi.multithread": False,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        **headers,
    }


def _call(handler: Any, path: str, headers: dict[str, str]) -> tuple[int, dict[str, str]]:
    route, _, query = path.partition("?")
    environ = _environ(route, query, headers)
    status: list[str] = []
    answer: dict[str, str] = {}

    def start_response(line: str, response_headers: list[tuple[str, str]], *_: Any) -> None:
        status.append(line)
        answer.update({k.lower(): v for k, v in response_headers})

    body = handler(environ, start_response)
    for _ in body:
        pass
    with contextlib.suppress(AttributeError):
        body.close()  # type: ignore[attr-defined]  # Django's responses have close()
    return int(status[0].split()[0]), answer


def handler_json(handler: Any, path: str, token: str) -> Any:
    """Return one API answer's JSON, read through the handler as the profiled requests are."""
    import io

    import orjson

    route, _, query = path.partition("?")
    body = io.BytesIO()
    headers = {"HTTP_AUTHORIZATION": f"Token {token}", "HTTP_ACCEPT": "application/json"}

    def start_response(*_: Any) -> None:
        return None

    for chunk in handler(_environ(route, query, headers), start_response):
        body.write(chunk)
    return orjson.loads(body.getvalue())


def _profile(
    handler: Any, requests: list[tuple[str, str, dict[str, str]]], *, revisit: bool
) -> tuple[dict[str, dict[str, float]], dict[str, int]]:
    """Return ms per request by kind and phase over ROUNDS openings, and each kind's last status."""
    clock_by_kind: dict[str, _Clock] = {kind: _Clock() for kind, _, _ in requests}
    etags: dict[str, str] = {}
    statuses: dict[str, int] = {}
    for _ in range(3):  # warm caches and connections, and collect the copies a revisit sends
        for kind, path, headers in requests:
            _, answer = _call(handler, path, headers)
            if "etag" in answer:
                etags[kind] = answer["etag"]
    for _ in range(ROUNDS):
        for kind, path, headers in requests:
            sent = dict(headers)
            if revisit and kind in etags:
                sent["HTTP_IF_NONE_MATCH"] = etags[kind]
            clock = clock_by_kind[kind]
            with _instrumented(clock), clock.phase("framework"):
                statuses[kind], _ = _call(handler, path, sent)
    table = {
        kind: {phase: clock.spent[phase] * 1000 / ROUNDS for phase in PHASES}
        for kind, clock in clock_by_kind.items()
    }
    return table, statuses


def _note(phases: dict[str, float]) -> str:
    return ", ".join(f"{name} {phases[name]:.2f}" for name in PHASES if phases[name] >= 0.005)


def _measure(pk: int) -> dict[str, Any]:
    """Profile the opening of session ``pk`` in this process; return the tables and statuses as JSON."""
    from django.conf import settings
    from django.core.handlers.wsgi import WSGIHandler
    from django.test import Client

    from sessions_app.models import ChatSession

    session = ChatSession.objects.get(pk=pk)
    browser = Client()
    browser.force_login(bench_user())  # type: ignore[arg-type]  # the bench user is a User
    cookie = f"{settings.SESSION_COOKIE_NAME}={browser.cookies[settings.SESSION_COOKIE_NAME].value}"
    handler = WSGIHandler()
    with bench_token("profile") as token:
        leaf = session.leaf_entry_id or ""
        # The rows the path's first page shows, as the team day's reader asks for their comment counts.
        page = handler_json(handler, f"/api/sessions/{pk}/path/?leaf={leaf}&limit=12&render=1", token)
        ids = [row["id"] for row in page["entries"] if row.get("id")] or [leaf]
        requests = _requests(pk, leaf, ids, token, cookie)
        first, statuses = _profile(handler, requests, revisit=False)
        again, again_statuses = _profile(handler, requests, revisit=True)
    return {"first": first, "statuses": statuses, "again": again, "again_statuses": again_statuses}


def _measure_served(pk: int) -> dict[str, Any]:
    """Run ``_measure`` in a child process with the settings the servers run with (DEBUG off, the static
    files collected): the bench process itself runs with DEBUG on, whose page costs a server never pays."""
    import subprocess
    import sys

    import orjson

    from bench.metrics.procs import REPO_DIR
    from bench.metrics.serve import server_env

    env = server_env()
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"], cwd=REPO_DIR, env=env, check=True
    )
    done = subprocess.run(
        [sys.executable, "-m", "bench.metrics.request_profile", str(pk)],
        cwd=REPO_DIR,
        env=env,
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["failed"]
        raise RuntimeError(f"request profile failed: {tail[0]}")
    out: dict[str, Any] = orjson.loads(done.stdout.strip().splitlines()[-1])
    return out


@metric("request_profile")
def request_profile(ctx: Context) -> list[Result]:
    """The session page's opening requests, phase by phase; then the same with current copies (304s)."""
    require_db(ctx)
    measured = _measure_served(session_pk(ctx, "1k"))
    first: dict[str, dict[str, float]] = measured["first"]
    statuses: dict[str, int] = measured["statuses"]
    again: dict[str, dict[str, float]] = measured["again"]
    again_statuses: dict[str, int] = measured["again_statuses"]
    bad = {k: v for k, v in statuses.items() if v != 200}
    rows = [
        Result(
            metric=f"request profile: {kind}",
            value=sum(phases.values()),
            unit="ms",
            goal="reference",
            note=f"ms by phase: {_note(phases)}",
        )
        for kind, phases in first.items()
    ]
    total = sum(sum(p.values()) for p in first.values())
    by_phase = {name: sum(p[name] for p in first.values()) for name in PHASES}
    rows.append(
        at_most(
            "request profile: the session page's 7 opening requests, in one process",
            total,
            "ms",
            25.0,
            note=f"ms by phase: {_note(by_phase)}; {ROUNDS} openings of a 1k-entry session, one request at "
            f"a time through Django's WSGI handler and every middleware, DEBUG off as the servers run"
            + (f"; not 200: {bad}" if bad else ""),
        )
    )
    revisit = sum(sum(p.values()) for p in again.values())
    again_by_phase = {name: sum(p[name] for p in again.values()) for name in PHASES}
    tagged = sorted(kind for kind, status in again_statuses.items() if status == 304)
    rows.append(
        Result(
            metric="request profile: the same opening with current copies (If-None-Match)",
            value=revisit,
            unit="ms",
            goal="reference",
            baseline=total,
            ratio=revisit / total if total else None,
            note=f"304 for {', '.join(tagged) or 'none'}; ms by phase: {_note(again_by_phase)}",
        )
    )
    return rows


if __name__ == "__main__":
    import sys

    import orjson

    from bench.django_env import setup_django

    problem = setup_django(migrate=False)
    if problem:
        raise SystemExit(problem)
    print(orjson.dumps(_measure(int(sys.argv[1]))).decode())
