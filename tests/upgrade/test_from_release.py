"""The previous release's own code makes a team's database and serves it while this release's ``migrate``
upgrades it; afterwards ``reconcile`` leaves every session as a fresh import of it would be, and the
team's data is all there.

The release named in ``previous_release.json`` is taken out of this clone's history (``git archive``)
into a folder of its own and run from there with this Python (the two releases' dependencies must be the
same; the test says so when they are not): its ``migrate`` creates a database of its own, its services
write the team (``release_team.py seed``), and its daphne serves it while threads append, push and read
over HTTP with its API token. This release's ``migrate`` runs meanwhile, with the lock monitor on
(``tests/upgrade/load.py``); the old server keeps writing a moment after it, as during a rollout, and is
then stopped. The test fails on any failed request, a deadlock, a failed ``migrate`` or a lock on the
session, entry or segment tables that stops the writers for more than 2 s.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import cycle
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import redis
from django.db import connection

from tests.factories import HEADER, assistant_message, line, user_message
from tests.procs import free_port, wait_for_port, wait_until
from tests.upgrade.load import (
    LONGEST_LOCK,
    ROOT,
    Load,
    Locks,
    own_database,
    run_current,
    step,
    watch_locks,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's locks"),
]

HERE = Path(__file__).resolve().parent
RELEASE_FILE = HERE / "previous_release.json"
APPENDERS, PUSHERS, READERS = 2, 2, 2
AFTER_MIGRATE = 2.0  # seconds the old release keeps writing into the new schema


@dataclass(frozen=True)
class Release:
    version: str
    commit: str


def previous_release() -> Release:
    """The release before this one, as ``previous_release.json`` names it (cutting a release moves it)."""
    value = json.loads(RELEASE_FILE.read_text())
    return Release(version=value["version"], commit=value["commit"])


def _git_show(commit: str, path: str) -> str | None:
    """The file at ``path`` in ``commit``, or None where that commit has none."""
    shown = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{commit}:{path}"], capture_output=True, text=True
    )
    return shown.stdout if shown.returncode == 0 else None


def _dependencies(pyproject: str | None) -> dict[str, Any]:
    project = tomllib.loads(pyproject or "").get("project", {})
    return {
        "dependencies": project.get("dependencies", []),
        "optional": project.get("optional-dependencies", {}),
    }


def require_commit(release: Release) -> None:
    """Fail, saying why, when this clone lacks the release's commit."""
    found = subprocess.run(
        ["git", "-C", str(ROOT), "cat-file", "-e", f"{release.commit}^{{commit}}"], capture_output=True
    )
    if found.returncode != 0:
        pytest.fail(
            f"release {release.version}'s commit {release.commit} (tests/upgrade/previous_release.json) is "
            f"not in the history of {ROOT}: the upgrade test runs that release's own code, so it needs a "
            "full clone (git fetch --unshallow)"
        )


def extract(release: Release, into: Path) -> None:
    """Write the release's tree into ``into``."""
    archive = subprocess.Popen(["git", "-C", str(ROOT), "archive", release.commit], stdout=subprocess.PIPE)
    untar = subprocess.run(["tar", "-x", "-C", str(into)], stdin=archive.stdout, capture_output=True)
    assert archive.stdout is not None
    archive.stdout.close()
    assert archive.wait() == 0 and untar.returncode == 0, untar.stderr.decode()[-2000:]


def check_same_dependencies(release: Release) -> None:
    """The old release runs on this release's Python environment: only right while both pin the same."""
    differ = []
    if _git_show(release.commit, "requirements.lock") != (ROOT / "requirements.lock").read_text():
        differ.append("requirements.lock")
    if _dependencies(_git_show(release.commit, "pyproject.toml")) != _dependencies(
        (ROOT / "pyproject.toml").read_text()
    ):
        differ.append("pyproject.toml's dependencies")
    if differ:
        pytest.fail(
            f"release {release.version} ({release.commit[:9]}) depends on other packages than this "
            f"release ({', '.join(differ)} differ), but this test runs it with this release's Python "
            f"({sys.executable}): give the old release an environment of its own (a virtualenv from its "
            "requirements.lock) before trusting this test"
        )


def release_redis() -> str:
    """A Redis database of the old release's own: the tasks its server queues (with no worker to run
    them) must not reach a worker of another test sharing the suite's Redis, which would run them on
    its own database."""
    url = os.environ.get("REDIS_URL", "") or "redis://127.0.0.1:6379/15"
    base, _, number = url.rpartition("/")
    own = (int(number) + 13) % 16 if number.isdigit() else 13
    return f"{base}/{own}"


@contextlib.contextmanager
def release_redis_emptied() -> Iterator[None]:
    """Empty the old release's Redis database afterwards: nothing it queued outlives the test."""
    try:
        yield
    finally:
        with contextlib.suppress(redis.RedisError):
            redis.Redis.from_url(release_redis()).flushdb()


def release_env(url: str, **extra: str) -> dict[str, str]:
    """The old release's environment: this one's, on the database at ``url`` and a Redis database of its
    own, without this tree on its path."""
    inherited = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DATABASE_", "PIWEB_", "PG")) and k != "PYTHONPATH"
    }
    return {
        **inherited,
        "DJANGO_SETTINGS_MODULE": "piweb.settings",
        "DATABASE_URL": url,
        "REDIS_URL": release_redis(),
        **extra,
    }


def run_release(tree: Path, url: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run the old release's ``python <args>`` from its tree (its modules come first on the path)."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=tree,
        env=release_env(url),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _answer(done: subprocess.CompletedProcess[str], what: str) -> Any:
    assert done.returncode == 0, f"{what} failed:\n{done.stderr[-3000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


@dataclass
class OldServer:
    base_url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@contextlib.contextmanager
def serving(tree: Path, url: str) -> Iterator[OldServer]:
    """The old release's daphne on the database, stopped (its process group) afterwards."""
    port = free_port()
    log_path = tree / "server.log"
    env = release_env(url, PIWEB_READY_WORKERS="0", PYTHONUNBUFFERED="1", DJANGO_LOG_LEVEL="WARNING")
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "piweb.asgi:application"],
            cwd=tree,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_for_port(port, process, log_path, seconds=60)
        yield OldServer(f"http://127.0.0.1:{port}", process, log_path)
    finally:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


# -- the load, over HTTP as the team's clients send it -----------------------------------------------------


def _call(client: httpx.Client, method: str, path: str, expect: int, **kwargs: Any) -> Any:
    """Send one request; a status other than ``expect`` fails, naming the request and the answer."""
    response = client.request(method, path, **kwargs)
    if response.status_code != expect:
        raise AssertionError(f"{method} {path} → {response.status_code}: {response.text[:300]}")
    return response.json()


def _client(server: OldServer, token: str) -> httpx.Client:
    return httpx.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30)


def _appender(server: OldServer, token: str, load: Load, session_id: int, leaf: str, name: str) -> None:
    """Append a question, then its answer, one request each, under the session's leaf."""
    with _client(server, token) as client:
        n = 0
        while not load.stop.is_set():
            question = user_message(f"{name}-u{n}", leaf, f"question {n} while upgrading")
            answer = assistant_message(
                f"{name}-a{n}",
                question["id"],
                f"answer {n}",
                usage={"input": 40 + n, "output": 7, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0},
            )
            for entry in (question, answer):

                def append(entry: dict[str, Any] = entry) -> None:
                    nonlocal leaf
                    path = f"/api/sessions/{session_id}/append/"
                    leaf = _call(client, "POST", path, 201, json={"entries": [entry]})["leafId"]

                load.timed("append", append)
            n += 1
            time.sleep(0.02)


def _pusher(server: OldServer, token: str, load: Load, pi_id: str) -> None:
    """Push a session file's new lines as ``piweb-sync`` does, a question and its answer at a time."""
    header = line({**HEADER, "id": pi_id})
    lines, size, last = 0, 0, None
    with _client(server, token) as client:
        n = 0
        while not load.stop.is_set():
            question = user_message(f"u{n}", last, f"pushed question {n}")
            answer = assistant_message(f"a{n}", f"u{n}", f"pushed answer {n}")
            batch = [line(question), line(answer)]
            added = sum(len(text.encode()) + 1 for text in batch)
            body = {
                "header": header,
                "lines": batch,
                "from": {"lines": lines, "bytes": size, "lastId": last},
                "to": {"lines": lines + len(batch), "bytes": size + added},
            }

            def push(body: dict[str, Any] = body, added: int = added, n: int = n) -> None:
                nonlocal lines, size, last
                _call(client, "POST", "/api/sync/", 200, json=body)
                lines, size, last = lines + 2, size + added, f"a{n}"

            load.timed("push", push)
            n += 1
            time.sleep(0.02)


def _reader(server: OldServer, token: str, load: Load, session_ids: list[int]) -> None:
    """Read the session list and each session's tree, path and context in turn."""
    paths = cycle(
        ["/api/sessions/"]
        + [f"/api/sessions/{pk}/{part}/" for pk in session_ids for part in ("tree", "path", "context")]
    )
    with _client(server, token) as client:
        while not load.stop.is_set():
            path = next(paths)

            def read(path: str = path) -> None:
                _call(client, "GET", path, 200)

            load.timed("read", read)
            time.sleep(0.01)


def _session_ids(url: str) -> list[int]:
    with psycopg.connect(url) as db:
        return [row[0] for row in db.execute("SELECT id FROM sessions_app_chatsession ORDER BY id")]


def test_the_previous_release_is_upgraded_while_it_serves_the_team(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="httpx")  # a line per request would bury a failure's report
    release = previous_release()
    require_commit(release)
    check_same_dependencies(release)
    with (
        tempfile.TemporaryDirectory(prefix=f"piweb-{release.version}-") as folder,
        own_database("piweb_from_release") as url,
        release_redis_emptied(),
    ):
        tree = Path(folder)
        extract(release, tree)
        old_migrate = run_release(tree, url, "manage.py", "migrate", "-v0")
        assert old_migrate.returncode == 0, f"{release.version}'s migrate: {old_migrate.stderr[-3000:]}"
        (tree / "release_team.py").write_text((HERE / "release_team.py").read_text())
        team = _answer(run_release(tree, url, "release_team.py", "seed"), f"{release.version}'s seed")
        token = team["token"]

        load, locks = Load(), Locks()
        with serving(tree, url) as server:
            # The old release answers: its /readyz names it.
            wait_until(
                lambda: (
                    httpx.get(server.base_url + "/readyz", timeout=5).json()["version"] == release.version
                ),
                30,
                f"release {release.version}'s /readyz",
            )
            threads = [
                threading.Thread(
                    target=_appender, args=(server, token, load, int(pk), leaf, f"w{i}"), daemon=True
                )
                for i, (pk, leaf) in enumerate(team["load"].items())
            ][:APPENDERS]
            threads += [
                threading.Thread(target=_pusher, args=(server, token, load, f"push-{i}"), daemon=True)
                for i in range(PUSHERS)
            ]
            read = [*map(int, team["load"]), *team["team"][:2]]
            threads += [
                threading.Thread(target=_reader, args=(server, token, load, read), daemon=True)
                for _ in range(READERS)
            ]
            threads.append(threading.Thread(target=watch_locks, args=(url, load, locks, set()), daemon=True))
            for thread in threads:
                thread.start()
            try:
                time.sleep(1)  # the load runs before the upgrade starts, as on a live server
                started = time.monotonic()
                # As docs/operations.md says to run it, with the 2 s lock timeout.
                migrate = run_current(
                    url, "manage.py", "migrate", "-v1", timeout=180, PGOPTIONS="-c lock_timeout=2s"
                )
                ended = time.monotonic()
                time.sleep(AFTER_MIGRATE)  # the old release writes into the new schema during the rollout
            finally:
                load.stop.set()
                for thread in threads:
                    thread.join(timeout=30)
            server_log = server.log()

        during, after = (
            load.between(started, ended, writes=True),
            load.between(ended, time.monotonic(), writes=True),
        )
        applied = [text for text in migrate.stdout.splitlines() if "Applying" in text]
        print(
            f"\nrelease {release.version} → this one: migrate {ended - started:.1f} s "
            f"({len(applied)} migration(s)); {len(load.ops)} requests, {len(during)} writes during "
            f"migrate and {len(after)} after, {len(load.errors)} failed; longest blocking lock: "
            f"{locks.describe()}"
        )
        assert migrate.returncode == 0, f"migrate failed:\n{migrate.stdout[-1500:]}\n{migrate.stderr[-3000:]}"
        for where, text in [
            ("migrate", migrate.stdout + migrate.stderr),
            ("the old server's log", server_log),
        ]:
            assert "deadlock detected" not in text, f"a deadlock in {where}:\n{text[-3000:]}"
        assert not load.errors, (
            f"{len(load.errors)} request(s) failed, first ones:\n"
            + "\n".join(load.errors[:10])
            + f"\nthe old server's log ends:\n{server_log[-3000:]}"
        )
        assert len(during) >= 5, f"the writers did not overlap migrate ({len(during)} writes)"
        assert len(after) >= 5, f"the old release hardly wrote after migrate ({len(after)} writes)"
        assert locks.longest()[0] <= LONGEST_LOCK, f"a lock stopped the writers: {locks.describe()}"

        reconciled = run_current(url, "manage.py", "reconcile")
        assert reconciled.returncode == 0, reconciled.stderr[-3000:]
        print(
            f"reconcile: {reconciled.stdout.strip()}\nthe team as {release.version} left it: {team['census']}"
        )
        now = _answer(
            run_current(
                url, "-m", "tests.upgrade.release_team", "census", token, team["link"], str(team["team"][0])
            ),
            "the census after the upgrade",
        )
        assert now["census"] == team["census"], "the upgrade changed the team's data"
        assert now["served"] == {"api": 200, "link": 200}, "the old token or link no longer opens the session"
        compared = step(url, "compare", *map(str, _session_ids(url)))
        differ = {
            pk: [key for key in upgraded if upgraded[key] != fresh[key]]
            for pk, (upgraded, fresh) in compared.items()
            if upgraded != fresh
        }
        assert not differ, f"sessions whose bookkeeping differs from a fresh import's (id: what): {differ}"
