"""Private PostgreSQL, Redis, web and worker processes that a test may SIGKILL and start again.

Nothing here touches the machine's shared services: every process listens on a free loopback port and
keeps its data under its own temporary folder.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx
import psycopg
import redis

from piweb.workers import ALL_QUEUES
from tests.procs import free_port

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
PG_ROOT = Path("/usr/lib/postgresql")
VISIBILITY_TIMEOUT = 2  # seconds before Redis hands an unacknowledged task to another worker


def postgres_bin() -> Path | None:
    """Return the newest installed PostgreSQL server's bin folder, if any."""
    found = sorted(PG_ROOT.glob("*/bin/postgres"), key=lambda p: int(p.parent.parent.name))
    return found[-1].parent if found else None


def missing_tools() -> str | None:
    """Return why the private services cannot run here, or None when they can."""
    if postgres_bin() is None:
        return "PostgreSQL server binaries are not installed"
    if shutil.which("redis-server") is None:
        return "redis-server is not installed"
    if not (VENV_BIN / "daphne").exists() or not (VENV_BIN / "celery").exists():
        return "daphne or celery is missing from the virtualenv"
    return None


@dataclass(slots=True)
class Service:
    """One process of the stack: started in its own process group so a kill takes all its children."""

    name: str
    command: Sequence[str]
    env: Mapping[str, str]
    log_path: Path
    healthy: Callable[[], bool]
    user: str | None = None
    process: subprocess.Popen[bytes] | None = None
    kills: int = 0
    recoveries: list[float] = field(default_factory=list)
    _log: IO[bytes] | None = None

    def start(self, *, wait: float = 60.0) -> float:
        """Start the process and wait until it answers; return the seconds that took."""
        if self._log is None:
            self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        extra: dict[str, Any] = {"user": self.user, "group": self.user} if self.user else {}
        started = time.monotonic()
        deadline = started + wait
        while True:
            self.process = subprocess.Popen(
                list(self.command),
                cwd=ROOT,
                env=dict(self.env),
                stdout=self._log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                **extra,
            )
            while self.process.poll() is None and time.monotonic() < deadline:
                with contextlib.suppress(Exception):  # not ready yet may be any error at all
                    if self.healthy():
                        return time.monotonic() - started
                time.sleep(0.1)
            if self.process.poll() is None or time.monotonic() >= deadline:
                raise AssertionError(f"timed out after {wait}s waiting for {self.name} to become healthy")
            # It exited at once: after a crash PostgreSQL refuses to start while the killed server's
            # backends still hold its shared memory. Try again once they are gone.
            time.sleep(0.5)

    def kill(self) -> None:
        """SIGKILL the process and everything it started, as a crash would."""
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)
        self._reap_group(self.process.pid)
        self.kills += 1

    def crash_and_restart(self, *, wait: float = 60.0) -> float:
        """Kill, start again, and record the seconds from the kill until the process answers."""
        started = time.monotonic()
        self.kill()
        self.start(wait=wait)
        elapsed = time.monotonic() - started
        self.recoveries.append(elapsed)
        return elapsed

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
            self._reap_group(self.process.pid)
        if self._log is not None:
            self._log.close()
            self._log = None

    @staticmethod
    def _reap_group(pgid: int) -> None:
        # Children of a killed leader may linger a moment (PostgreSQL refuses to start while they hold
        # its shared memory); wait until no live process is left in the group. Zombies do not count.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _live_members(pgid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
            time.sleep(0.05)


def _live_members(pgid: int) -> bool:
    """Return whether any process of the group is still running (read from /proc)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


class PrivatePostgres:
    """A throwaway cluster in a temporary folder, run as the ``postgres`` user when we are root."""

    def __init__(self, log_dir: Path) -> None:
        bin_dir = postgres_bin()
        assert bin_dir is not None
        self.folder = Path(tempfile.mkdtemp(prefix="piweb-faults-pg-"))
        self.port = free_port()
        user = "postgres" if os.geteuid() == 0 else None
        if user:
            # initdb and postgres refuse to run as root; the folder must belong to the server's user.
            shutil.chown(self.folder, user, user)
        subprocess.run(
            [str(bin_dir / "initdb"), "-D", str(self.folder / "data"), "-A", "trust", "-U", "postgres"],
            check=True,
            capture_output=True,
            user=user,
            group=user,
        )
        command = [str(bin_dir / "postgres"), "-D", str(self.folder / "data"), "-p", str(self.port)]
        command += ["-k", str(self.folder), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=on"]
        self.service = Service("postgres", command, os.environ, log_dir / "postgres.log", self.ready, user)

    def url(self, database: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def ready(self) -> bool:
        with psycopg.connect(self.url(), connect_timeout=2) as conn:
            conn.execute("SELECT 1")
        return True

    def create_database(self, name: str) -> None:
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')

    def close(self) -> None:
        self.service.stop()
        shutil.rmtree(self.folder, ignore_errors=True)


class PrivateRedis:
    """A redis-server on a free port that keeps nothing on disk, so a restart forgets everything."""

    def __init__(self, log_dir: Path) -> None:
        self.port = free_port()
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        command += ["--appendonly", "no", "--dir", str(log_dir)]
        self.service = Service("redis", command, os.environ, log_dir / "redis.log", self.ready)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def ready(self) -> bool:
        return bool(redis.Redis.from_url(self.url, socket_timeout=1).ping())


@dataclass(slots=True)
class Stack:
    """Everything one fault test runs against, and how to reach it."""

    postgres: PrivatePostgres
    redis: PrivateRedis
    env: dict[str, str]
    log_dir: Path
    web_port: int = 0
    token: str = ""
    web: Service | None = None
    worker: Service | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def manage(self, *args: str, stdin: str | None = None) -> str:
        """Run ``manage.py`` against the private database and return its output."""
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode != 0:
            raise AssertionError(f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
        return done.stdout

    def python(self, code: str) -> str:
        """Run Python with Django set up on the private database; return what it printed."""
        return self.manage("shell", "--no-imports", "-c", code)

    def client(self, timeout: float = 5.0) -> httpx.Client:
        return httpx.Client(
            base_url=self.base_url, headers={"Authorization": f"Token {self.token}"}, timeout=timeout
        )

    def web_healthy(self) -> bool:
        with self.client(timeout=2) as http:
            return http.get("/api/sessions/").status_code == 200

    def start_web(self) -> Service:
        self.web_port = self.web_port or free_port()
        command = [str(VENV_BIN / "daphne"), "-b", "127.0.0.1", "-p", str(self.web_port)]
        command += ["piweb.asgi:application"]
        self.web = Service("web", command, self.env, self.log_dir / "web.log", self.web_healthy)
        self.web.start()
        return self.web

    def start_worker(self) -> Service:
        log = self.log_dir / "worker.log"
        command = [str(VENV_BIN / "celery"), "-A", "piweb", "worker", "--pool=solo", "--concurrency=1"]
        command += ["-Q", ",".join(ALL_QUEUES)]  # one worker for every queue
        command += ["--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel=INFO"]
        self.worker = Service("worker", command, self.env, log, lambda: self._worker_ready(log))
        self.worker.start()
        return self.worker

    def start_worker_group(self, **env: str) -> Service:
        """Start ``python -m piweb.workers`` as ``make run`` does: a runs worker, an operations worker
        with beat, and their supervisor; healthy once both workers say they are ready."""
        log = self.log_dir / "workers.log"
        command = [sys.executable, "-m", "piweb.workers"]
        self.worker = Service("workers", command, {**self.env, **env}, log, lambda: self._group_ready(log))
        self.worker.start()
        return self.worker

    def _group_ready(self, log: Path) -> bool:
        assert self.worker is not None
        return log.read_bytes().count(b" ready.") >= 2 * (self.worker.kills + 1)

    def _worker_ready(self, log: Path) -> bool:
        # Each start appends to the log; count the "ready" lines against the starts so far.
        assert self.worker is not None
        return log.read_bytes().count(b" ready.") > self.worker.kills

    def close(self) -> None:
        for service in (self.worker, self.web):
            if service is not None:
                service.stop()
        self.redis.service.stop()
        self.postgres.close()


def start_stack(log_dir: Path, *, username: str = "writer", password: str = "pw-for-faults") -> Stack:
    """Start private PostgreSQL and Redis, migrate, and create an API user; web and worker start later."""
    postgres = PrivatePostgres(log_dir)
    redis_server = PrivateRedis(log_dir)
    stack = Stack(postgres, redis_server, {}, log_dir)
    try:
        postgres.service.start()
        redis_server.service.start()
        postgres.create_database("piweb")
        inherited = {
            k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "REDIS_", "PIWEB_"))
        }
        stack.env = {
            **inherited,
            "DJANGO_SETTINGS_MODULE": "piweb.settings",
            "DATABASE_URL": postgres.url("piweb"),
            "REDIS_URL": redis_server.url,
            "PIWEB_CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT),
            "PIWEB_LOG_LEVEL": "WARNING",
            "DJANGO_LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
        }
        stack.manage("migrate", "--noinput", "-v0")
        stack.token = stack.manage("create_api_token", username, "--password", password).strip()
    except BaseException:
        stack.close()
        raise
    return stack
