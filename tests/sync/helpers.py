"""Session lines and a way to run ``piweb-sync`` in-process with its own environment."""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from piweb_sync.cli import main


def header(session_id: str = "sync-demo", version: int | None = 3, cwd: str = "/w") -> str:
    value: dict[str, Any] = {"type": "session"}
    if version is not None:
        value["version"] = version
    value.update({"id": session_id, "timestamp": "2026-03-01T10:00:00.000Z", "cwd": cwd})
    return json.dumps(value, separators=(",", ":"))


def entry(i: int, parent: str | None, *, prefix: str = "e", text: str | None = None) -> str:
    role = "assistant" if i % 2 else "user"
    message: dict[str, Any] = {
        "role": role,
        "content": [{"type": "text", "text": text or f"line {i} ✓"}],
        "timestamp": i,
    }
    return json.dumps(
        {
            "type": "message",
            "id": f"{prefix}{i}",
            "parentId": parent,
            "timestamp": "2026-03-01T10:00:01Z",
            "message": message,
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )


def chain(count: int, *, start: int = 0, prefix: str = "e") -> list[str]:
    return [entry(i, f"{prefix}{i - 1}" if i else None, prefix=prefix) for i in range(start, start + count)]


def write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def append(path: Path, lines: list[str]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(line + "\n" for line in lines))


@contextlib.contextmanager
def environment(**values: str) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


class Cli:
    """Runs ``piweb-sync`` in this process with the server, token and folders of one test."""

    def __init__(self, server: str, token: str, home: Path) -> None:
        self.env = {
            "PIWEB_URL": server,
            "PIWEB_TOKEN": token,
            "XDG_STATE_HOME": str(home / "state"),
            "XDG_CONFIG_HOME": str(home / "config"),
            "PI_CODING_AGENT_DIR": str(home / "agent"),
        }

    def __call__(self, *args: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with environment(**self.env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
        return code, out.getvalue(), err.getvalue()
