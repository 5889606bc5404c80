"""``piweb-runner``: serve piweb's runs with Pi in the workspaces given on the command line.

The server and the runner token come from ``PIWEB_URL`` / ``PIWEB_RUNNER_TOKEN`` or from piweb-sync's
config file (keys ``server`` and ``runner_token``, a file only its owner can read): never the command
line. Pi is ``pi`` on the PATH unless ``PIWEB_RUNNER_PI`` names another command (split like a shell).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shlex
import sys
from pathlib import Path

from piweb_sync.config import ConfigError, _xdg, config_path, config_values

from piweb_runner.runner import ALL_TOOLS, Runner, RunnerSettings, Workspace


def _credentials() -> tuple[str, str]:
    values = config_values()
    path = config_path()
    server = os.environ.get("PIWEB_URL") or values.get("server", "")
    token = os.environ.get("PIWEB_RUNNER_TOKEN") or values.get("runner_token", "")
    if not server:
        raise ConfigError(f"no server: set PIWEB_URL or `server` in {path}")
    if not token:
        raise ConfigError(f"no runner token: set PIWEB_RUNNER_TOKEN or `runner_token` in {path}")
    return server.rstrip("/"), token


def _workspace(text: str) -> Workspace:
    name, sep, folder = text.partition("=")
    path = Path(folder if sep else name).expanduser().resolve()
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} is not a folder")
    return Workspace(name if sep else path.name, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="piweb-runner", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workspace",
        "-w",
        action="append",
        type=_workspace,
        required=True,
        help="a folder Pi may work in, as PATH or NAME=PATH (repeatable)",
    )
    parser.add_argument("--name", default=os.uname().nodename, help="how piweb lists this runner")
    parser.add_argument(
        "--tools",
        default="read,bash,edit,write",
        help=f"the tools Pi may use here (Pi's --tools; of {','.join(ALL_TOOLS)})",
    )
    parser.add_argument("--label", action="append", default=[], help="a label piweb shows (repeatable)")
    parser.add_argument(
        "--commit-trailer",
        action="store_true",
        help="add a 'Piweb-Session: <session url>' trailer to the commits Pi makes here (off by default)",
    )
    parser.add_argument("--verbose", "-v", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    unknown = [t for t in tools if t not in ALL_TOOLS]
    if unknown:
        parser.error(f"unknown tools: {', '.join(unknown)}")
    try:
        server, token = _credentials()
    except ConfigError as exc:
        print(f"piweb-runner: {exc}", file=sys.stderr)
        return 2
    settings = RunnerSettings(
        server=server,
        token=token,
        name=args.name,
        workspaces=args.workspace,
        tools=tools,
        labels=args.label,
        pi=shlex.split(os.environ.get("PIWEB_RUNNER_PI", "pi")),
        state=_xdg("XDG_STATE_HOME", ".local/state") / "piweb-runner",
        commit_trailer=args.commit_trailer,
    )
    try:
        return asyncio.run(Runner(settings).serve())
    except KeyboardInterrupt:
        return 130
