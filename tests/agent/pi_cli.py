"""The real Pi 1.6.0 CLI in print mode against a loopback provider, isolated in a temporary folder.

The differential tests run Pi and piweb's run loop against the same scripted provider, from the same
session file, and compare what each wrote and what each sent.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.e2e.pi import NODE, PI_CLI, pi_installed

__all__ = ["MODEL", "PROVIDER", "PiCli", "pi_installed"]

PROVIDER = "fake"
MODEL = "fake-model"


class PiCli:
    """One agent folder and one working directory; ``prompt`` runs Pi once and returns its session file."""

    def __init__(
        self,
        root: Path,
        *,
        provider_url: str,
        api: str,
        context_window: int,
        max_tokens: int,
        compaction: Mapping[str, Any],
        retry: Mapping[str, Any],
        reasoning: bool = False,
        thinking: str = "off",
        images: bool = False,
    ) -> None:
        self.agent = root / "agent"
        self.work = root / "work"
        self.sessions = root / "sessions"
        for folder in (self.agent, self.work, self.sessions):
            folder.mkdir(parents=True, exist_ok=True)
        # No compat block: Pi detects the settings from the host, as piweb must.
        base_url = f"{provider_url}/v1" if api == "openai-completions" else provider_url
        model = {
            "id": MODEL,
            "name": "Fake",
            "reasoning": reasoning,
            "input": ["text", "image"] if images else ["text"],
            "contextWindow": context_window,
            "maxTokens": max_tokens,
            "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
        }
        models = {
            "providers": {PROVIDER: {"baseUrl": base_url, "api": api, "apiKey": "k", "models": [model]}}
        }
        settings = {
            "defaultProvider": PROVIDER,
            "defaultModel": MODEL,
            "defaultThinkingLevel": thinking,
            "compaction": dict(compaction),
            "retry": dict(retry),
            "quietStartup": True,
        }
        (self.agent / "models.json").write_text(json.dumps(models))
        (self.agent / "settings.json").write_text(json.dumps(settings))
        base = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "PIWEB_"))}
        self.env = {
            **base,
            "TZ": "UTC",
            "PI_CODING_AGENT_DIR": str(self.agent),
            "PI_CODING_AGENT_SESSION_DIR": str(self.sessions),
            "PI_OFFLINE": "1",
            "PI_SKIP_VERSION_CHECK": "1",
            "PI_TELEMETRY": "0",
        }

    def _command(self) -> list[str]:
        command = [str(NODE), str(PI_CLI), "--tools", "read", "--no-extensions", "--no-skills"]
        return [*command, "--no-prompt-templates", "--no-context-files"]

    def prompt_aborted(self, text: str, *, session: Path, stalled: threading.Event) -> Path:
        """Run one prompt over Pi's RPC mode and abort it (Pi's Esc) once ``stalled`` is set, i.e. once the
        provider has sent part of the reply and stopped; return the session file."""
        command = [*self._command(), "--mode", "rpc", "--session", str(session)]
        process = subprocess.Popen(
            command,
            cwd=self.work,
            env=self.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert process.stdin is not None and process.stdout is not None
        watchdog = threading.Timer(120, process.kill)
        watchdog.start()
        try:
            process.stdin.write(json.dumps({"id": "p", "type": "prompt", "message": text}) + "\n")
            process.stdin.flush()
            assert stalled.wait(60), "the provider never reached the stall"
            time.sleep(0.5)  # Pi reads what was sent before the stall
            process.stdin.write(json.dumps({"id": "a", "type": "abort"}) + "\n")
            process.stdin.flush()
            for line in process.stdout:
                if json.loads(line).get("type") == "agent_settled":
                    break
            process.stdin.close()
            process.wait(60)
        finally:
            watchdog.cancel()
            process.kill()
        return session

    def navigate(self, target_id: str, *, session: Path) -> None:
        """Move ``session``'s leaf to ``target_id`` with a summary of the branch left, as Pi's tree
        navigation writes it (a one-command extension: print mode has no navigation of its own)."""
        extension = self.agent / "summarize_back.mjs"
        extension.write_text(_SUMMARIZE_BACK)
        command = [str(NODE), str(PI_CLI), "--no-extensions", "-e", str(extension), "--no-skills"]
        command += ["--no-prompt-templates", "--no-context-files", "--session", str(session)]
        command += ["-p", f"/summarize-back {target_id}"]
        done = subprocess.run(
            command, cwd=self.work, env=self.env, capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, f"pi failed: {done.stdout[-2000:]} {done.stderr[-2000:]}"

    def prompt(
        self, text: str, *, session: Path | None = None, check: bool = True, files: tuple[str, ...] = ()
    ) -> Path:
        """Run one prompt (continuing ``session`` when given, attaching ``files`` as Pi's ``@file``
        arguments); return the session file Pi wrote."""
        command = self._command()
        if session is not None:
            command += ["--session", str(session)]
        command += ["-p", *(f"@{name}" for name in files), text]
        done = subprocess.run(
            command, cwd=self.work, env=self.env, capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0 or not check, f"pi failed: {done.stderr[-2000:]}"
        if session is not None:
            return session
        (written,) = sorted(self.sessions.glob("*.jsonl"))
        return written


# The command the navigation test runs: the session tree moves to the named entry, summarizing the branch.
_SUMMARIZE_BACK = """
export default function (pi) {
  pi.registerCommand("summarize-back", {
    description: "Return to an entry, summarizing the branch left",
    handler: async (args, ctx) => {
      await ctx.navigateTree(args.trim(), { summarize: true });
    },
  });
}
"""
