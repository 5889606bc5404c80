"""Text lengths as JavaScript counts them (``String.prototype.length``), which Pi's estimates divide."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pitree.jsjson import utf16_len
from pitree.tokens import estimate_tokens

NODE = Path(__file__).resolve().parents[2] / "bench" / "node_modules" / ".bin" / "node"
TEXTS = [
    "plain",
    "",
    "café",
    "日本語のテキスト",
    "😀 and 𝄞",
    "lone \ud800 high",
    "lone \udfff low",
    "é😀\udbff",
]


@pytest.mark.skipif(not NODE.exists(), reason="Node from `make pi` is not installed")
def test_lengths_are_javascripts() -> None:
    # JSON carries lone surrogates as escapes both ways, so Node reads the very strings Python holds.
    source = (
        "const t = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "console.log(JSON.stringify(t.map(s => s.length)))"
    )
    done = subprocess.run(
        [str(NODE), "-e", source], input=json.dumps(TEXTS), capture_output=True, text=True, check=True
    )
    assert [utf16_len(t) for t in TEXTS] == json.loads(done.stdout)


def test_an_estimate_counts_astral_characters_twice() -> None:
    # 4 emoji are 8 UTF-16 units: 2 tokens, not 1.
    assert estimate_tokens({"role": "user", "content": "😀😀😀😀"}) == 2
    assert estimate_tokens({"role": "user", "content": "abcd"}) == 1
