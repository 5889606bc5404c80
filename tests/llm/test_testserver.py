"""The scripted server run standalone, as a separate process reading a script file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx

import piweb
from providers.llm import ProviderConfig, complete
from providers.llm import testserver as ts
from tests.llm.conftest import user


def test_standalone_server_plays_a_script_file(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([ts.reply("from a file"), ts.overflow()]))
    root = Path(piweb.__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}
    command = [sys.executable, "-m", "providers.llm.testserver", "--port", "0", "--script", str(script)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert process.stdout is not None
        url = process.stdout.readline().split()[-1]
        config = ProviderConfig(
            api="anthropic-messages",
            provider="anthropic",
            base_url=url,
            model_id="claude-test",
            api_key="k",
            context_window=200000,
            max_output_tokens=1000,
        )
        assert complete(config, system=None, messages=[user("hi")])["content"][0]["text"] == "from a file"
        assert "prompt is too long" in complete(config, system=None, messages=[user("hi")])["errorMessage"]

        httpx.post(f"{url}/_script", json=[ts.reply("added later")]).raise_for_status()
        assert complete(config, system=None, messages=[user("hi")])["content"][0]["text"] == "added later"
        recorded = httpx.get(f"{url}/_requests").json()
        assert [r["path"] for r in recorded] == ["/v1/messages?beta=true"] * 3
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0


def test_empty_script_answers_with_an_error(server: ts.ProviderServer, config: ProviderConfig) -> None:
    message = complete(config, system=None, messages=[user("hi")])
    assert message["stopReason"] == "error"
    assert "no scripted response left" in message["errorMessage"]
