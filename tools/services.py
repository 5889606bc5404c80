"""Make sure the PostgreSQL and Redis that the tests are configured for answer, starting them if needed.

``python tools/services.py up --database-url URL --redis-url URL`` (what ``make test`` runs) leaves both
services answering and the database created. For each service that does not answer on a local address:

1. the machine's own server, when one is installed for that port (PostgreSQL's Debian cluster, the
   system Redis on 6379), is started;
2. when no server is installed, Debian's package is installed (as root, or with password-less sudo),
   the way ``make browser`` installs Chromium, and step 1 is tried again;
3. otherwise a private throwaway instance is started on the configured port, with its data under
   ``.data/services/``; ``python tools/services.py down`` (and ``make clean``) stops those again.

Only the standard library and psycopg are used, so this runs right after the virtualenv is built.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
# Where private instances keep their data; tests point it elsewhere.
PRIVATE = Path(os.environ.get("PIWEB_SERVICES_DIR") or ROOT / ".data" / "services")
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", ""}
PG_ROOT = Path("/usr/lib/postgresql")
READY_SECONDS = 60


class SetupError(Exception):
    """A service could not be made to answer; the message says what to do."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a service is expected: host, port, and for PostgreSQL the user, password and database."""

    host: str
    port: int
    user: str = ""
    password: str = ""
    database: str = ""

    @property
    def local(self) -> bool:
        return self.host in LOCAL_HOSTS

    def answers(self) -> bool:
        """Return whether something accepts TCP connections there."""
        try:
            with socket.create_connection((self.host or "127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False


def parse_postgres(url: str) -> Endpoint:
    parts = urlsplit(url)
    if parts.scheme not in {"postgres", "postgresql", "pgsql"}:
        raise SetupError(f"DATABASE_URL must be a postgres:// URL for the tests, not {url!r}")
    return Endpoint(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 5432,
        user=unquote(parts.username or "postgres"),
        password=unquote(parts.password or ""),
        database=unquote(parts.path.lstrip("/")) or "piweb",
    )


def parse_redis(url: str) -> Endpoint:
    parts = urlsplit(url)
    if parts.scheme != "redis":
        raise SetupError(f"REDIS_URL must be a redis:// URL for the tests, not {url!r}")
    return Endpoint(host=parts.hostname or "127.0.0.1", port=parts.port or 6379)


def say(message: str) -> None:
    print(f"services: {message}", flush=True)


def wait_for(check: Callable[[], bool], what: str, seconds: float = READY_SECONDS) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise SetupError(f"{what} did not start answering within {seconds:.0f} s")


def run(command: list[str], **kwargs: object) -> bool:
    """Run a command quietly; return whether it succeeded (its output is shown only when it fails)."""
    done = subprocess.run(command, capture_output=True, text=True, check=False, **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        say(f"{' '.join(command[:3])} … failed: {' / '.join(detail)}")
    return done.returncode == 0


# --- installing packages ----------------------------------------------------------------------------


def apt_install(package: str) -> bool:
    """Install a Debian package as root or with password-less sudo; return whether it worked."""
    if shutil.which("apt-get") is None:
        return False
    if os.geteuid() == 0:
        prefix: list[str] = []
    elif shutil.which("sudo") and run(["sudo", "-n", "true"]):
        prefix = ["sudo", "-n"]
    else:
        return False
    say(f"installing Debian's {package}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return run([*prefix, "apt-get", "update", "-q"], env=env) and run(
        [*prefix, "apt-get", "install", "-y", "-q", package], env=env
    )


# --- PostgreSQL ------------------------------------------------------------------------------------


def postgres_bin() -> Path | None:
    """Return the newest installed PostgreSQL server's bin folder, if any."""
    found = sorted(PG_ROOT.glob("*/bin/postgres"), key=lambda p: int(p.parent.parent.name))
    return found[-1].parent if found else None


def machine_clusters() -> list[tuple[str, str, int]]:
    """Return Debian's clusters as (version, name, port), from ``pg_lsclusters``."""
    if shutil.which("pg_lsclusters") is None:
        return []
    done = subprocess.run(["pg_lsclusters", "-h"], capture_output=True, text=True, check=False)
    clusters = []
    for line in done.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[2].isdigit():
            clusters.append((fields[0], fields[1], int(fields[2])))
    return clusters


def start_machine_postgres(endpoint: Endpoint) -> bool:
    for version, name, port in machine_clusters():
        if port == endpoint.port:
            say(f"starting the machine's PostgreSQL cluster {version}/{name} on port {port}")
            if run(["pg_ctlcluster", "--skip-systemctl-redirect", version, name, "start"]):
                return True
    return False


def server_user() -> str | None:
    """Return the user a private server runs as: ourselves, or ``postgres`` when we are root."""
    if os.geteuid() != 0:
        return None
    try:
        import pwd

        pwd.getpwnam("postgres")
    except KeyError as missing:
        raise SetupError("PostgreSQL refuses to run as root and there is no 'postgres' user") from missing
    return "postgres"


def private_postgres_folder(port: int, user: str | None) -> Path:
    """Return the folder for a private cluster: under .data/services/ when the server's user can use it."""
    folder = PRIVATE / f"postgres-{port}"
    pointer = PRIVATE / f"postgres-{port}.path"
    if pointer.exists():
        return Path(pointer.read_text().strip())
    folder.mkdir(parents=True, exist_ok=True)
    if user is None:
        return folder
    shutil.chown(folder, user, user)
    if run(["test", "-w", str(folder)], user=user):
        return folder
    # The checkout is not reachable for the server's user (a home folder, say): keep the data in /tmp and
    # remember where, so `down` finds it.
    folder.rmdir()
    elsewhere = Path(tempfile.mkdtemp(prefix=f"piweb-postgres-{port}-"))
    shutil.chown(elsewhere, user, user)
    pointer.write_text(f"{elsewhere}\n")
    return elsewhere


def start_private_postgres(endpoint: Endpoint) -> None:
    bin_dir = postgres_bin()
    if bin_dir is None:
        raise SetupError("PostgreSQL server binaries are not installed (Debian: apt-get install postgresql)")
    user = server_user()
    folder = private_postgres_folder(endpoint.port, user)
    data = folder / "data"
    as_user: dict[str, object] = {"user": user, "group": user} if user else {}
    if not (data / "PG_VERSION").exists():
        say(f"creating a private PostgreSQL cluster in {folder}")
        command = [str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", endpoint.user or "postgres"]
        if not run([*command, "--no-sync"], **as_user):
            raise SetupError(f"initdb failed for {data}")
    say(f"starting a private PostgreSQL on port {endpoint.port} ({folder})")
    # Throwaway data: no fsync, no Unix socket (the tests connect over TCP).
    options = f"-p {endpoint.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off"
    command = [str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(folder / "server.log"), "-o", options]
    if not run([*command, "start"], **as_user):
        raise SetupError(f"the private PostgreSQL did not start; see {folder / 'server.log'}")


def stop_private_postgres(folder: Path) -> None:
    bin_dir = postgres_bin()
    data = folder / "data"
    if bin_dir is None or not (data / "postmaster.pid").exists():
        return
    user = server_user()
    as_user: dict[str, object] = {"user": user, "group": user} if user else {}
    say(f"stopping the private PostgreSQL in {folder}")
    run([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"], **as_user)


def postgres_up(url: str) -> None:
    endpoint = parse_postgres(url)
    if not endpoint.answers():
        if not endpoint.local:
            raise SetupError(f"PostgreSQL at {endpoint.host}:{endpoint.port} does not answer; start it there")
        installed = postgres_bin() is not None or apt_install("postgresql")
        if not (installed and start_machine_postgres(endpoint) and _wait_quietly(endpoint)):
            start_private_postgres(endpoint)
        wait_for(lambda: _postgres_accepts(url), f"PostgreSQL on port {endpoint.port}")
    create_database(url, endpoint)


def _wait_quietly(endpoint: Endpoint) -> bool:
    with contextlib.suppress(SetupError):
        wait_for(endpoint.answers, "PostgreSQL", seconds=30)
        return True
    return False


def _admin_url(url: str) -> str:
    """The same server and user, connected to the always-present ``postgres`` database."""
    parts = urlsplit(url)
    return parts._replace(path="/postgres").geturl()


def _postgres_accepts(url: str) -> bool:
    import psycopg

    try:
        with psycopg.connect(_admin_url(url), connect_timeout=2) as conn:
            conn.execute("SELECT 1")
    except psycopg.OperationalError:
        return False
    return True


def create_database(url: str, endpoint: Endpoint) -> None:
    import psycopg
    from psycopg import sql

    try:
        with psycopg.connect(_admin_url(url), connect_timeout=5, autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [endpoint.database])
            if exists.fetchone() is None:
                say(f"creating database {endpoint.database}")
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(endpoint.database)))
    except psycopg.OperationalError as failed:
        where = f"{endpoint.host}:{endpoint.port}"
        raise SetupError(f"PostgreSQL at {where} refused the tests: {failed}") from failed


# --- Redis -----------------------------------------------------------------------------------------


def redis_ping(endpoint: Endpoint) -> bool:
    try:
        with socket.create_connection((endpoint.host or "127.0.0.1", endpoint.port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith((b"+PONG", b"-NOAUTH"))
    except OSError:
        return False


def start_machine_redis(endpoint: Endpoint) -> bool:
    """Start the system Redis the way CI machines run it: port 6379, nothing kept on disk."""
    if endpoint.port != 6379 or os.geteuid() != 0 or shutil.which("redis-server") is None:
        return False
    say("starting the machine's Redis on port 6379")
    for folder in ("/var/lib/redis", "/var/log/redis"):
        Path(folder).mkdir(parents=True, exist_ok=True)
    command = ["redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "-::1", "--port", "6379"]
    command += ["--save", "", "--appendonly", "no", "--dir", "/var/lib/redis"]
    return run([*command, "--logfile", "/var/log/redis/ci.log"])


def start_private_redis(endpoint: Endpoint) -> None:
    if shutil.which("redis-server") is None:
        raise SetupError("redis-server is not installed (Debian: apt-get install redis-server)")
    folder = PRIVATE / f"redis-{endpoint.port}"
    folder.mkdir(parents=True, exist_ok=True)
    say(f"starting a private Redis on port {endpoint.port} ({folder})")
    command = ["redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "--port", str(endpoint.port)]
    command += ["--save", "", "--appendonly", "no", "--dir", str(folder)]
    command += ["--pidfile", str(folder / "redis.pid"), "--logfile", str(folder / "redis.log")]
    if not run(command):
        raise SetupError(f"the private Redis did not start; see {folder / 'redis.log'}")


def stop_private_redis(folder: Path) -> None:
    pidfile = folder / "redis.pid"
    if not pidfile.exists():
        return
    say(f"stopping the private Redis in {folder}")
    with contextlib.suppress(ValueError, ProcessLookupError):
        pid = int(pidfile.read_text().strip())
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            os.kill(pid, 0)  # raises ProcessLookupError once it is gone
            time.sleep(0.1)
    pidfile.unlink(missing_ok=True)


def redis_up(url: str) -> None:
    endpoint = parse_redis(url)
    if redis_ping(endpoint):
        return
    if endpoint.answers():
        raise SetupError(f"something on {endpoint.host}:{endpoint.port} answers, but it is not Redis")
    if not endpoint.local:
        raise SetupError(f"Redis at {endpoint.host}:{endpoint.port} does not answer; start it there")
    installed = shutil.which("redis-server") is not None or apt_install("redis-server")
    if not (installed and start_machine_redis(endpoint) and _ping_quietly(endpoint)):
        start_private_redis(endpoint)
    wait_for(lambda: redis_ping(endpoint), f"Redis on port {endpoint.port}")


def _ping_quietly(endpoint: Endpoint) -> bool:
    with contextlib.suppress(SetupError):
        wait_for(lambda: redis_ping(endpoint), "Redis", seconds=15)
        return True
    return False


# --- commands --------------------------------------------------------------------------------------


def down() -> None:
    """Stop every private instance under .data/services/ (the machine's own services are left alone)."""
    if not PRIVATE.exists():
        return
    for pointer in PRIVATE.glob("postgres-*.path"):
        folder = Path(pointer.read_text().strip())
        stop_private_postgres(folder)
        shutil.rmtree(folder, ignore_errors=True)
        pointer.unlink()
    for folder in PRIVATE.glob("postgres-*"):
        if folder.is_dir():
            stop_private_postgres(folder)
    for folder in PRIVATE.glob("redis-*"):
        stop_private_redis(folder)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("command", choices=["up", "down"])
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL", ""))
    args = parser.parse_args(argv)
    try:
        if args.command == "down":
            down()
            return 0
        if not args.database_url or not args.redis_url:
            raise SetupError("both --database-url and --redis-url are needed")
        postgres_up(args.database_url)
        redis_up(args.redis_url)
    except SetupError as failed:
        print(f"services: {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
