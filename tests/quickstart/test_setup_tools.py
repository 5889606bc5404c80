"""What `make test` and `make venv` do on a machine that is not set up: start services, find Python."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
import redis

from tests.procs import free_port

ROOT = Path(__file__).resolve().parents[2]
FIND_PYTHON = ROOT / "tools" / "find-python"
SERVICES = ROOT / "tools" / "services.py"


def services(command: str, folder: Path, *urls: str) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, str(SERVICES), command]
    if urls:
        args += ["--database-url", urls[0], "--redis-url", urls[1]]
    env = {**os.environ, "PIWEB_SERVICES_DIR": str(folder)}
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.slow
@pytest.mark.skipif(
    not list(Path("/usr/lib/postgresql").glob("*/bin/postgres")) or shutil.which("redis-server") is None,
    reason="needs the PostgreSQL and Redis server binaries",
)
def test_services_start_private_postgres_and_redis_where_nothing_listens(tmp_path: Path) -> None:
    pg_port, redis_port = free_port(), free_port()
    database = f"postgres://postgres@127.0.0.1:{pg_port}/piweb_fresh"
    cache = f"redis://127.0.0.1:{redis_port}/3"
    try:
        started = services("up", tmp_path / "services", database, cache)
        assert started.returncode == 0, started.stdout + started.stderr
        assert "private PostgreSQL" in started.stdout and "private Redis" in started.stdout

        with psycopg.connect(database, connect_timeout=5) as conn:  # the database was created too
            assert conn.execute("SELECT current_database()").fetchone() == ("piweb_fresh",)
        assert redis.Redis.from_url(cache).ping()

        # A second `make test` finds them answering and starts nothing.
        again = services("up", tmp_path / "services", database, cache)
        assert again.returncode == 0 and "starting" not in again.stdout
    finally:
        stopped = services("down", tmp_path / "services")
    assert stopped.returncode == 0, stopped.stderr
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(database, connect_timeout=2)
    with pytest.raises(redis.ConnectionError):
        redis.Redis.from_url(cache, socket_connect_timeout=1).ping()


def test_services_refuse_a_remote_server_that_does_not_answer(tmp_path: Path) -> None:
    # 192.0.2.0/24 is reserved for documentation: nothing answers there, and it is not this machine.
    done = services("up", tmp_path, "postgres://postgres@192.0.2.1:5432/piweb", "redis://127.0.0.1:6379/15")
    assert done.returncode == 1
    assert "192.0.2.1:5432 does not answer" in done.stderr


def fake_tools(folder: Path) -> Path:
    """A PATH holding only what find-python needs besides Python: sort and cat."""
    folder.mkdir(parents=True, exist_ok=True)
    for tool in ("sort", "cat"):
        found = shutil.which(tool)
        assert found is not None
        (folder / tool).symlink_to(found)
    return folder


def fake_python(path: Path, version: tuple[int, int]) -> Path:
    """An executable that answers find-python's version check as a Python of ``version`` would."""
    path.parent.mkdir(parents=True, exist_ok=True)
    ok = 0 if version >= (3, 12) else 1
    path.write_text(f"#!/bin/sh\nexit {ok}\n")
    path.chmod(0o755)
    return path


def find_python(path: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": path, "HOME": "/nonexistent"}
    return subprocess.run(
        ["/bin/bash", str(FIND_PYTHON)], env=env, capture_output=True, text=True, timeout=30, check=False
    )


def test_find_python_asks_pyenv_where_its_versions_are(tmp_path: Path) -> None:
    tools = fake_tools(tmp_path / "tools")
    root = tmp_path / "somewhere" / "pyenv-root"
    fake_python(root / "versions" / "3.11.7" / "bin" / "python3", (3, 11))
    wanted = fake_python(root / "versions" / "3.12.4" / "bin" / "python3", (3, 12))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "pyenv").write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = root ]; then echo {root}; '
        'elif [ "$1" = versions ]; then printf "3.11.7\\n3.12.4\\n"; fi\n'
    )
    (bin_dir / "pyenv").chmod(0o755)
    fake_python(bin_dir / "python3", (3, 11))  # the system's python3 is too old

    found = find_python(f"{bin_dir}:{tools}")

    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == str(wanted)


def test_find_python_names_what_to_install_when_nothing_fits(tmp_path: Path) -> None:
    tools = fake_tools(tmp_path / "tools")
    bin_dir = tmp_path / "bin"
    fake_python(bin_dir / "python3", (3, 11))

    found = find_python(f"{bin_dir}:{tools}")

    assert found.returncode == 1 and found.stdout == ""
    assert "needs Python 3.12 or newer" in found.stderr
    assert "apt-get install python3.12" in found.stderr and "pyenv install 3.12" in found.stderr
