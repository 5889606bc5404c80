"""Where things live: the server and token, the client's own state, and Pi's session folders.

The token is read from ``PIWEB_TOKEN`` or from a config file only the user can read; it never travels on
the command line, where other users of the machine could see it in the process list.
"""

from __future__ import annotations

import os
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ConfigError",
    "Credentials",
    "config_path",
    "config_values",
    "load_credentials",
    "pi_session_root",
    "pi_session_subdir",
    "state_path",
    "write_config",
]


class ConfigError(Exception):
    """The server or token is missing, or the config file is unsafe or unreadable."""


@dataclass(frozen=True, slots=True)
class Credentials:
    server: str
    token: str


def _xdg(variable: str, fallback: str) -> Path:
    value = os.environ.get(variable, "")
    # The XDG spec says relative values are invalid and must be ignored.
    return Path(value) if value and os.path.isabs(value) else Path.home() / fallback


def config_path() -> Path:
    """``$PIWEB_SYNC_CONFIG``, else ``$XDG_CONFIG_HOME/piweb-sync/config.toml``."""
    explicit = os.environ.get("PIWEB_SYNC_CONFIG")
    if explicit:
        return Path(explicit)
    return _xdg("XDG_CONFIG_HOME", ".config") / "piweb-sync" / "config.toml"


def state_path() -> Path:
    """``$PIWEB_SYNC_STATE``, else ``$XDG_STATE_HOME/piweb-sync/state.json`` (never inside ``~/.pi``)."""
    explicit = os.environ.get("PIWEB_SYNC_STATE")
    if explicit:
        return Path(explicit)
    return _xdg("XDG_STATE_HOME", ".local/state") / "piweb-sync" / "state.json"


def config_values() -> dict[str, str]:
    """The config file's text values ({} without a file); refused when others can read it."""
    path = config_path()
    if not path.exists():
        return {}
    if path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(f"{path} can be read by other users; run: chmod 600 {path}")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    return {k: v for k, v in raw.items() if isinstance(v, str)}


def load_credentials() -> Credentials:
    """Return the server and token: the environment (``PIWEB_URL``, ``PIWEB_TOKEN``) over the config file."""
    path = config_path()
    file_values = config_values()
    server = os.environ.get("PIWEB_URL") or file_values.get("server", "")
    token = os.environ.get("PIWEB_TOKEN") or file_values.get("token", "")
    if not server:
        raise ConfigError(f"no server: set PIWEB_URL or run `piweb-sync login --server URL` ({path})")
    if not token:
        raise ConfigError(f"no token: set PIWEB_TOKEN or run `piweb-sync login` ({path})")
    return Credentials(server.rstrip("/"), token)


def write_config(server: str, token: str) -> Path:
    """Write the config file with mode 0600 (created private, never widened afterwards)."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    text = f"server = {_toml_string(server)}\ntoken = {_toml_string(token)}\n"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        os.fchmod(handle.fileno(), 0o600)  # an existing file keeps its old mode through O_CREAT
        handle.write(text)
    return path


def _toml_string(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _agent_dir() -> Path:
    explicit = os.environ.get("PI_CODING_AGENT_DIR")
    return Path(explicit).expanduser() if explicit else Path.home() / ".pi" / "agent"


def pi_session_root() -> Path:
    """The folder Pi writes sessions under: ``$PI_CODING_AGENT_SESSION_DIR`` or ``<agent dir>/sessions``."""
    explicit = os.environ.get("PI_CODING_AGENT_SESSION_DIR")
    return Path(explicit).expanduser() if explicit else _agent_dir() / "sessions"


def pi_session_subdir(cwd: str) -> str:
    """Pi's per-project folder name: ``--<cwd without its leading separator, / \\ : as ->--``."""
    trimmed = cwd[1:] if cwd[:1] in ("/", "\\") else cwd
    return "--" + trimmed.replace("/", "-").replace("\\", "-").replace(":", "-") + "--"


def pi_session_dir_for(cwd: str) -> Path:
    """Where Pi looks for the sessions of ``cwd`` (flat when ``PI_CODING_AGENT_SESSION_DIR`` is set)."""
    if os.environ.get("PI_CODING_AGENT_SESSION_DIR"):
        return pi_session_root()
    return pi_session_root() / pi_session_subdir(cwd)
