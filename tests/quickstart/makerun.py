"""`make run` as a newcomer starts it: the embedded SQLite database, no REDIS_URL, a local worker.

The data folder is a temporary one (``PIWEB_DATA_DIR``) so the test never touches the checkout's own
``.data/``; everything else is what ``make run`` does, started in its own process group like a terminal
would, so a Ctrl-C can be sent to all of it at once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import httpx

from tests.procs import free_port, wait_until

ROOT = Path(__file__).resolve().parents[2]


def group_members(pgid: int) -> list[int]:
    """Return the live (non-zombie) processes of a process group, read from /proc."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members


def embedded_env(data_dir: Path) -> dict[str, str]:
    """The environment of `make run` on a fresh machine: no service URLs, our own data folder."""
    inherited = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DATABASE_", "REDIS_", "PIWEB_", "DJANGO_", "CELERY_"))
    }
    return {
        **inherited,
        "PIWEB_DATA_DIR": str(data_dir),
        "PIWEB_LLM_RATE": "10000/min",
        "PYTHONUNBUFFERED": "1",
    }


@dataclass(slots=True)
class MakeRun:
    """A running `make run` and what a test needs to talk to it."""

    process: subprocess.Popen[bytes]
    env: dict[str, str]
    port: int
    log_path: Path
    token: str = ""

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def data_dir(self) -> Path:
        return Path(self.env["PIWEB_DATA_DIR"])

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"manage.py {args[0]} failed:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    def api(self, timeout: float = 30.0) -> httpx.Client:
        headers = {"Authorization": f"Token {self.token}"}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout)

    def interrupt(self) -> None:
        """Ctrl-C in the terminal: SIGINT to every process of the foreground group."""
        os.killpg(self.process.pid, signal.SIGINT)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)


def worker_ready(log_path: Path, times: int = 1) -> bool:
    return log_path.read_text(errors="replace").count(" ready.") >= times


@contextlib.contextmanager
def make_run(data_dir: Path, log_path: Path) -> Iterator[MakeRun]:
    """Start `make run` on a free port; yield once the first page answers and the worker is ready."""
    env = embedded_env(data_dir)
    port = free_port()
    log: IO[bytes] = open(log_path, "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        ["make", "--no-print-directory", "run", "HOST=127.0.0.1", f"PORT={port}"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    running = MakeRun(process, env, port, log_path)
    try:
        wait_until(
            lambda: (
                process.poll() is None
                and httpx.get(f"{running.base_url}/accounts/login/", timeout=2).status_code == 200
            ),
            180,
            "the first page of make run",
        )
        wait_until(lambda: worker_ready(log_path), 60, "the worker")
        running.token = running.manage("create_api_token", "demo").strip()
        yield running
    finally:
        running.kill()
        log.close()
