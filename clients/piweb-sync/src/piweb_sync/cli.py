"""``piweb-sync``: push, pull, status and login. Quiet unless something needs the user; ``-v`` tells more."""

from __future__ import annotations

import argparse
import getpass
import logging
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import httpx

from . import __version__
from .config import ConfigError, config_path, load_credentials, pi_session_root, state_path, write_config
from .files import complete_lines, digest, find_header
from .pull import PullError, pull
from .push import FileReport, Pusher, ServerUnavailable, make_client, session_files
from .state import FileState, StateStore

log = logging.getLogger("piweb_sync")


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="count", default=0, help="say more (-vv: HTTP detail)")
    parser = argparse.ArgumentParser(
        prog="piweb-sync",
        description="Follow local Pi sessions into a piweb server and pull sessions back into Pi. "
        "The server and token come from PIWEB_URL / PIWEB_TOKEN or the config file written by `login`.",
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"piweb-sync {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    push = commands.add_parser("push", parents=[common], help="push new lines of Pi's session files")
    push.add_argument("dir", nargs="?", type=Path, help="session folder (default: Pi's own)")
    push.add_argument("--once", action="store_true", help="one pass, then exit")
    push.add_argument("--interval", type=float, default=1.0, help="seconds between passes (default 1)")

    get = commands.add_parser("pull", parents=[common], help="write a server session into Pi's folders")
    get.add_argument("session", help="session number, its page URL, or its Pi session id")
    get.add_argument("--dir", type=Path, help="write into this folder instead of Pi's folder for its cwd")
    get.add_argument("--at", metavar="ENTRY", help="resume at this entry instead of the session's leaf")

    status = commands.add_parser("status", parents=[common], help="one line per session file")
    status.add_argument("dir", nargs="?", type=Path, help="session folder (default: Pi's own)")

    login = commands.add_parser(
        "login", parents=[common], help="save the server and a token (read from stdin) to the config file"
    )
    login.add_argument("--server", help="piweb base URL, e.g. https://piweb.example.com")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    _setup_logging(args.verbose)
    try:
        if args.command == "login":
            return _login(args)
        credentials = load_credentials()
    except ConfigError as exc:
        print(f"piweb-sync: {exc}", file=sys.stderr)
        return 2
    store = StateStore.load(state_path(), credentials.server)
    with make_client(credentials.server, credentials.token) as http:
        if args.command == "push":
            return _push(http, store, args)
        if args.command == "pull":
            return _pull(http, store, args)
        return _status(http, store, args)


def _setup_logging(verbose: int) -> None:
    """Warnings only by default; ``-v`` adds what was pushed, ``-vv`` every HTTP request."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("piweb-sync: %(message)s"))
    for name, level in (
        ("piweb_sync", logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG),
        ("httpx", logging.DEBUG if verbose >= 2 else logging.WARNING),
    ):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(level)
        logger.propagate = False


def _push(http: httpx.Client, store: StateStore, args: argparse.Namespace) -> int:
    root = args.dir or pi_session_root()
    pusher = Pusher(http=http, store=store, root=root)
    if args.once:
        try:
            reports = pusher.push_once()
        except ServerUnavailable as exc:
            print(f"piweb-sync: {exc}", file=sys.stderr)
            return 1
        failed = [r for r in reports if r.status in ("conflict", "error")]
        log.info("%d file(s), %d line(s) stored", len(reports), sum(r.pushed for r in reports))
        return 1 if failed else 0
    stop = threading.Event()
    try:
        pusher.follow(interval=args.interval, stop=stop)
    except KeyboardInterrupt:
        stop.set()
    return 0


def _pull(http: httpx.Client, store: StateStore, args: argparse.Namespace) -> int:
    try:
        result = pull(http, args.session, target_dir=args.dir, at=args.at, store=store)
    except (PullError, httpx.HTTPError) as exc:
        print(f"piweb-sync: {exc}", file=sys.stderr)
        return 1
    log.info("%s %d line(s)", "wrote" if result.created else "appended", result.written)
    print(result.path)
    return 0


def _status(http: httpx.Client, store: StateStore, args: argparse.Namespace) -> int:
    root = args.dir or pi_session_root()
    pusher = Pusher(http=http, store=store, root=root)
    for path in session_files(root):
        state = store.files.get(str(path.resolve()))
        line = _status_line(path, state)
        if line is None:  # no progress of ours for this file: the server says what it holds
            try:
                line = _report_line(pusher.check_file(path))
            except ServerUnavailable as exc:
                line = f"{'unknown':8} {path}  {exc}"
            except OSError as exc:
                line = f"{'error':8} {path}  {exc}"
        print(line)
    return 0


def _report_line(report: FileReport) -> str:
    if report.status == "synced":
        return f"{'synced':8} {report.path}"
    if report.status == "behind":
        what = f" ({report.reason})" if report.reason else ""
        return f"{'behind':8} {report.path}  {report.pending} line(s) not pushed{what}"
    return f"{report.status:8} {report.path}  {report.reason}"


def _status_line(path: Path, state: FileState | None) -> str | None:
    """The file's status from this machine's own progress; None when that progress is missing or stale."""
    if state is not None and state.status in ("conflict", "error"):
        return f"{state.status:8} {path}  {state.reason}"
    try:
        data = path.read_bytes()
    except OSError as exc:
        return f"{'error':8} {path}  {exc}"
    header = find_header(data)
    if header is None:
        return f"{'waiting':8} {path}  no session header yet"
    if not (
        state is not None
        and state.session_id == header.session_id
        and state.bytes
        and digest(data[: state.bytes]) == state.digest
    ):
        return None
    pending = sum(1 for _ in complete_lines(data, state.bytes))
    if pending == 0:
        return f"{'synced':8} {path}"
    return f"{'behind':8} {path}  {pending} line(s) not pushed"


def _login(args: argparse.Namespace) -> int:
    server = args.server
    if not server:
        try:
            server = load_credentials().server
        except ConfigError:
            print("piweb-sync: give the server with --server URL", file=sys.stderr)
            return 2
    if sys.stdin.isatty():
        token = getpass.getpass("API token (create one on the server's API tokens page, /tokens/): ")
    else:
        token = sys.stdin.readline()
    token = token.strip()
    if not token:
        print("piweb-sync: no token given", file=sys.stderr)
        return 2
    with make_client(server.rstrip("/"), token) as http:
        try:
            response = http.get("/api/sessions/", params={"page_size": 1})
        except httpx.HTTPError as exc:
            print(f"piweb-sync: cannot reach {server}: {exc}", file=sys.stderr)
            return 1
    if response.status_code in (401, 403):
        print(f"piweb-sync: {server} refused the token", file=sys.stderr)
        return 1
    path = write_config(server.rstrip("/"), token)
    log.info("saved %s", path)
    print(config_path())
    return 0
