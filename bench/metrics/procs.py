"""Child processes of the bench: ports, waiting, memory readings and a clean stop, in one place."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO_DIR = Path(__file__).resolve().parent.parent.parent


def free_port() -> int:
    """Return a loopback port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("server did not start listening")


def wait_until(
    check: Callable[[], Any],
    seconds: float,
    what: str,
    process: subprocess.Popen[bytes] | None = None,
    interval: float = 0.2,
) -> None:
    """Poll ``check`` until it is true; fail after ``seconds``, or at once if ``process`` has exited."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the process exited while waiting for {what}")
        time.sleep(interval)
    raise RuntimeError(f"timed out waiting for {what}")


def status_kb(pid: int, field: str) -> int:
    """Return one memory field of /proc/<pid>/status (VmRSS, VmHWM) in kB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} missing for pid {pid}")


def stop(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """Ask a child to stop (SIGTERM, so servers and workers shut down cleanly); kill it if it will not."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
