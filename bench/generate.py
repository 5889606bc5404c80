"""Write deterministic synthetic Pi v3 sessions: deep chains, periodic rewinds, tool-heavy turns, compactions.

The output is streamed line by line; memory holds only the current path (ids and byte offsets), never the
entries. Every file gets a sidecar ``.meta.json`` with its shape (leaf, depth, rewinds, probe ids) so metrics
can pick targets without re-reading the file, and so a cached file is reused only when the generator
version and the spec match.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

import orjson

GENERATOR_VERSION = 4
DATA_DIR = Path(__file__).resolve().parent / ".data"
SIZES: dict[str, int] = {"1k": 1_000, "10k": 10_000, "100k": 100_000}
EQUAL_CONTEXT_ENTRIES = 400
DEFAULT_SEED = 20260301
PROBE_DEPTHS = (1_000, 10_000, 100_000)

# Roughly 4 bytes per token: compact at ~100k tokens of context and keep the newest ~20k tokens.
COMPACT_AT_BYTES = 400_000
KEEP_BYTES = 80_000
REWIND_EVERY = (250, 750)
START_MS = 1_772_359_200_000  # 2026-03-01T10:00:00Z

MODELS = (
    ("anthropic", "claude-sonnet-4-5", "anthropic-messages"),
    ("anthropic", "claude-opus-4-1", "anthropic-messages"),
    ("openai", "gpt-5", "openai-responses"),
    ("google", "gemini-2.5-pro", "google-generative-ai"),
)
THINKING_LEVELS = ("off", "minimal", "low", "medium", "high")
MODULES = ("parser", "lexer", "storage", "router", "auth", "cache", "scheduler", "render", "billing", "sync")
FUNCS = ("load", "parse", "flush", "resolve", "apply", "merge", "walk", "emit", "commit", "prune", "encode")
NOUNS = ("entry", "node", "buffer", "token", "session", "branch", "index", "record", "payload", "cursor")
WORDS = (
    "the",
    "parser",
    "fails",
    "when",
    "input",
    "is",
    "empty",
    "so",
    "we",
    "should",
    "guard",
    "against",
    "that",
    "case",
    "and",
    "add",
    "a",
    "regression",
    "test",
    "for",
    "it",
    "then",
    "rerun",
    "suite",
    "check",
    "whether",
    "cache",
    "invalidation",
    "still",
    "works",
    "after",
    "refactor",
    "of",
    "module",
)
BASH_COMMANDS = (
    "pytest -q",
    "npm test",
    "git status --short",
    "git diff --stat",
    "ls -la src",
    "make lint",
    "rg -n 'TODO' src",
    "cargo build",
    "python -m mypy src",
    "du -sh build",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionSpec:
    """What to generate: an entry count, a seed, and optionally a fixed-size leaf context."""

    entries: int
    seed: int = DEFAULT_SEED
    # When set, the session ends with a tail that is identical for any history length: a compaction whose
    # kept range and successors give the leaf a context of about this many entries.
    context_entries: int | None = None
    # Never compacted (rewinds still happen): the whole history is the leaf's context.
    uncompacted: bool = False

    @property
    def name(self) -> str:
        """Return a short file stem describing the spec."""
        stem = f"s{self.entries}"
        if self.context_entries is not None:
            stem += f"_ctx{self.context_entries}"
        if self.uncompacted:
            stem += "_nocompact"
        return f"{stem}_seed{self.seed}"


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionFile:
    """A generated session on disk with its shape."""

    path: Path
    meta: dict[str, object]


def standard_spec(size: str) -> SessionSpec:
    """Return the spec of one of the standard sizes ("1k", "10k", "100k")."""
    return SessionSpec(entries=SIZES[size])


def equal_context_specs(
    short: int = 1_000, long: int = 100_000, context_entries: int = EQUAL_CONTEXT_ENTRIES
) -> tuple[SessionSpec, SessionSpec]:
    """Return a short and a long history whose leaves have the same context (same tail entries)."""
    return (
        SessionSpec(entries=short, context_entries=context_entries),
        SessionSpec(entries=long, context_entries=context_entries),
    )


def ensure_session(spec: SessionSpec, data_dir: Path = DATA_DIR) -> SessionFile:
    """Return the cached session for spec, generating it if missing or made by another generator version."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / f"{spec.name}.jsonl"
    meta_path = data_dir / f"{spec.name}.meta.json"
    if path.exists() and meta_path.exists():
        meta = orjson.loads(meta_path.read_bytes())
        if meta.get("generator_version") == GENERATOR_VERSION and meta.get("bytes") == path.stat().st_size:
            return SessionFile(path=path, meta=meta)
    tmp = path.with_suffix(".jsonl.tmp")
    with tmp.open("wb", buffering=1 << 20) as fh:
        meta = write_session(spec, fh)
    os.replace(tmp, path)
    meta["bytes"] = path.stat().st_size
    meta_path.write_bytes(orjson.dumps(meta, option=orjson.OPT_INDENT_2))
    return SessionFile(path=path, meta=meta)


def write_session(spec: SessionSpec, fh: BinaryIO) -> dict[str, object]:
    """Stream the session for spec into fh and return its shape."""
    gen = _Generator(spec.seed, fh)
    gen.compacting = not spec.uncompacted
    gen.write_header()
    gen.prelude()
    main_target = spec.entries - (spec.context_entries or 0)
    while gen.count < main_target:
        gen.step()
    if spec.context_entries is not None:
        gen.tail(spec.context_entries)
    path = gen.path_ids
    probes = {str(d): path[d] for d in PROBE_DEPTHS if d < len(path)}
    return {
        "generator_version": GENERATOR_VERSION,
        "spec": asdict(spec),
        "entries": gen.count,
        "leaf_id": path[-1],
        "leaf_depth": len(path) - 1,
        "rewinds": gen.rewinds,
        "compactions": gen.compactions,
        "tool_calls": gen.tool_calls,
        "probe_ids_by_depth": probes,
        "context_first_entry_id": path[gen.kept_from] if gen.compactions else path[0],
    }


class _Generator:
    """Build entries along a current path; a rewind truncates the path and forks from an older entry."""

    def __init__(self, seed: int, fh: BinaryIO) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.fh = fh
        self.corpus = _build_corpus(random.Random(f"{seed}-corpus"))
        self.ids: set[str] = set()
        self.count = 0
        self.clock_ms = START_MS
        # Parallel arrays over the current path, root first.
        self.path_ids: list[str] = []
        self.path_cum: list[int] = []  # cumulative line bytes, for context-size accounting
        self.turn_starts: list[int] = []  # path indices of user messages that open a turn
        self.last_compaction = -1
        self.kept_from = 0
        self.model = MODELS[0]
        self.rewinds = 0
        self.compactions = 0
        self.tool_calls = 0
        self.next_rewind = self.rng.randint(*REWIND_EVERY)
        self.auto = True  # rewinds and automatic compactions
        self.compacting = True  # automatic compactions (off: an uncompacted history)
        self.files_read: list[str] = []
        self.files_modified: list[str] = []

    # -- plumbing -----------------------------------------------------------------------------------
    def new_id(self) -> str:
        while True:
            candidate = f"{self.rng.getrandbits(32):08x}"
            if candidate not in self.ids:
                self.ids.add(candidate)
                return candidate

    def tick(self) -> tuple[str, int]:
        self.clock_ms += self.rng.randint(400, 20_000)
        iso = datetime.fromtimestamp(self.clock_ms / 1000, UTC).isoformat(timespec="milliseconds")
        return iso.replace("+00:00", "Z"), self.clock_ms

    def write_header(self) -> None:
        bits = self.rng.getrandbits(128)
        sid = f"{bits:032x}"
        header = {
            "type": "session",
            "version": 3,
            "id": f"{sid[:8]}-{sid[8:12]}-7{sid[13:16]}-{sid[16:20]}-{sid[20:32]}",
            "timestamp": self.tick()[0],
            "cwd": "/home/dev/project",
        }
        self.fh.write(orjson.dumps(header) + b"\n")

    def emit(self, type_: str, fields: dict[str, object], iso: str | None = None) -> str:
        """Append an entry under the current leaf and make it the leaf."""
        entry_id = self.new_id()
        if iso is None:
            iso = self.tick()[0]
        entry = {
            "type": type_,
            "id": entry_id,
            "parentId": self.path_ids[-1] if self.path_ids else None,
            "timestamp": iso,
        }
        entry.update(fields)
        line = orjson.dumps(entry) + b"\n"
        self.fh.write(line)
        self.path_ids.append(entry_id)
        self.path_cum.append((self.path_cum[-1] if self.path_cum else 0) + len(line))
        self.count += 1
        return entry_id

    def context_bytes(self) -> int:
        before = self.path_cum[self.kept_from - 1] if self.kept_from > 0 else 0
        return self.path_cum[-1] - before if self.path_cum else 0

    def text(self, lo: int, hi: int) -> str:
        """Return lo..hi bytes of realistic code/log text drawn from the corpus."""
        want = self.rng.randint(lo, hi)
        start = self.rng.randrange(len(self.corpus))
        parts: list[str] = []
        size = 0
        i = start
        while size < want:
            line = self.corpus[i % len(self.corpus)]
            parts.append(line)
            size += len(line) + 1
            i += 1
        return "\n".join(parts)

    def sentence(self, lo: int, hi: int) -> str:
        words = [self.rng.choice(WORDS) for _ in range(self.rng.randint(lo, hi))]
        return " ".join(words).capitalize() + "."

    def file_path(self) -> str:
        return f"src/{self.rng.choice(MODULES)}/{self.rng.choice(NOUNS)}_{self.rng.randint(1, 40)}.py"

    # -- entries ------------------------------------------------------------------------------------
    def user(self, text: str) -> str:
        iso, ms = self.tick()
        idx = len(self.path_ids)
        entry_id = self.emit(
            "message",
            {"message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ms}},
            iso,
        )
        self.turn_starts.append(idx)
        return entry_id

    def assistant(self, content: list[dict[str, object]], stop_reason: str) -> str:
        iso, ms = self.tick()
        provider, model, api = self.model
        context_tokens = self.context_bytes() // 4
        output = sum(len(orjson.dumps(block)) for block in content) // 4
        cache_read = context_tokens * 9 // 10
        usage = {
            "input": context_tokens - cache_read,
            "output": output,
            "cacheRead": cache_read,
            "cacheWrite": 0,
            "totalTokens": context_tokens + output,
            "cost": {
                "input": round((context_tokens - cache_read) * 3e-6, 6),
                "output": round(output * 15e-6, 6),
                "cacheRead": round(cache_read * 0.3e-6, 6),
                "cacheWrite": 0,
                "total": round(
                    (context_tokens - cache_read) * 3e-6 + output * 15e-6 + cache_read * 0.3e-6, 6
                ),
            },
        }
        message = {
            "role": "assistant",
            "content": content,
            "api": api,
            "provider": provider,
            "model": model,
            "usage": usage,
            "stopReason": stop_reason,
            "timestamp": ms,
        }
        return self.emit("message", {"message": message}, iso)

    def tool_call(self) -> tuple[dict[str, object], str, dict[str, object]]:
        """Return (toolCall block, tool name, toolResult message fields)."""
        self.tool_calls += 1
        call_id = f"toolu_{self.rng.getrandbits(80):020x}"
        tool = self.rng.choices(("read", "bash", "edit", "write"), weights=(5, 3, 3, 1))[0]
        path = self.file_path()
        details: dict[str, object] | None = None
        if tool == "read":
            args: dict[str, object] = {"path": path}
            result = self.text(250, 2_000)
            self.files_read.append(path)
        elif tool == "bash":
            args = {"command": self.rng.choice(BASH_COMMANDS), "timeout": 120}
            result = self.text(80, 1_400)
        elif tool == "edit":
            old, new = self.text(30, 200), self.text(30, 200)
            args = {"path": path, "oldText": old, "newText": new}
            result = f"Successfully replaced text in {path}."
            details = {
                "diff": "\n".join(
                    ["-" + line for line in old.split("\n")] + ["+" + n for n in new.split("\n")]
                )
            }
            self.files_modified.append(path)
        else:
            content = self.text(200, 1_200)
            args = {"path": path, "content": content}
            result = f"Successfully wrote {len(content)} bytes to {path}"
            self.files_modified.append(path)
        block = {"type": "toolCall", "id": call_id, "name": tool, "arguments": args}
        fields: dict[str, object] = {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": tool,
            "content": [{"type": "text", "text": result}],
        }
        if details is not None:
            fields["details"] = details
        fields["isError"] = self.rng.random() < 0.04
        return block, tool, fields

    def tool_round(self, calls: int) -> None:
        content: list[dict[str, object]] = []
        if self.rng.random() < 0.3:
            content.append(
                {
                    "type": "thinking",
                    "thinking": self.sentence(20, 80),
                    "thinkingSignature": f"sig{self.rng.getrandbits(64):016x}",
                }
            )
        if self.rng.random() < 0.5:
            content.append({"type": "text", "text": self.sentence(5, 25)})
        pending = [self.tool_call() for _ in range(calls)]
        content.extend(block for block, _, _ in pending)
        self.assistant(content, "toolUse")
        for _, _, fields in pending:
            iso, ms = self.tick()
            self.emit("message", {"message": {**fields, "timestamp": ms}}, iso)

    def turn(self) -> None:
        """One user request answered by zero or more tool rounds and a final text reply."""
        if self.rng.random() < 0.03:
            iso, ms = self.tick()
            message = {
                "role": "bashExecution",
                "command": self.rng.choice(BASH_COMMANDS),
                "output": self.text(100, 1_500),
                "exitCode": self.rng.choice((0, 0, 0, 1)),
                "cancelled": False,
                "truncated": False,
                "timestamp": ms,
            }
            self.emit("message", {"message": message}, iso)
        request = self.sentence(6, 40)
        if self.rng.random() < 0.1:
            request += "\n\n" + self.text(200, 2_000)  # a pasted stack trace or snippet
        self.user(request)
        heavy = self.rng.random() < 0.2
        rounds = self.rng.randint(6, 18) if heavy else self.rng.randint(0, 3)
        for _ in range(rounds):
            self.tool_round(self.rng.randint(1, 4) if heavy else self.rng.randint(1, 2))
        self.assistant([{"type": "text", "text": self.sentence(10, 120)}], "stop")

    def compact(self, first_kept: int) -> None:
        tokens_before = self.context_bytes() // 4
        details = {
            "readFiles": sorted(set(self.files_read))[:40],
            "modifiedFiles": sorted(set(self.files_modified))[:40],
        }
        summary = "## Goal\n" + self.sentence(15, 40) + "\n\n## Progress\n" + self.text(800, 2_500)
        fields = {
            "summary": summary,
            "firstKeptEntryId": self.path_ids[first_kept],
            "tokensBefore": tokens_before,
            "details": details,
        }
        self.last_compaction = len(self.path_ids)
        self.emit("compaction", fields)
        self.kept_from = first_kept
        self.compactions += 1
        self.files_read.clear()
        self.files_modified.clear()

    def auto_compact(self) -> None:
        """Compact like Pi's threshold trigger: keep the newest turns worth about KEEP_BYTES."""
        threshold = self.path_cum[-1] - KEEP_BYTES
        candidates = [i for i in self.turn_starts if i > self.last_compaction]
        if not candidates:
            return
        first_kept = candidates[-1]
        for i in reversed(candidates):
            if self.path_cum[i] < threshold:
                break
            first_kept = i
        self.compact(first_kept)

    def rewind(self) -> None:
        """Fork: redo one of the last few turns, which leaves the old continuation as a side branch."""
        eligible = [i - 1 for i in self.turn_starts[-6:] if i - 1 >= max(self.last_compaction, 0)]
        if not eligible:
            return
        target = self.rng.choice(eligible)
        del self.path_ids[target + 1 :]
        del self.path_cum[target + 1 :]
        while self.turn_starts and self.turn_starts[-1] > target:
            self.turn_starts.pop()
        self.rewinds += 1

    def prelude(self) -> None:
        provider, model, _ = self.model
        self.emit("model_change", {"provider": provider, "modelId": model})
        self.emit("thinking_level_change", {"thinkingLevel": "medium"})
        self.turn()
        self.emit("session_info", {"name": "Refactor " + self.rng.choice(MODULES)})

    def step(self) -> None:
        """Maybe rewind, compact or change settings, then play one turn."""
        if self.auto and self.count >= self.next_rewind:
            self.rewind()
            self.next_rewind = self.count + self.rng.randint(*REWIND_EVERY)
        if self.auto and self.compacting and self.context_bytes() > COMPACT_AT_BYTES:
            self.auto_compact()
        roll = self.rng.random()
        if roll < 0.01:
            self.model = self.rng.choice(MODELS)
            self.emit("model_change", {"provider": self.model[0], "modelId": self.model[1]})
        elif roll < 0.02:
            self.emit("thinking_level_change", {"thinkingLevel": self.rng.choice(THINKING_LEVELS)})
        elif roll < 0.035:
            target = self.path_ids[self.rng.randrange(max(0, len(self.path_ids) - 50), len(self.path_ids))]
            self.emit("label", {"targetId": target, "label": f"checkpoint-{self.count}"})
        elif roll < 0.037:
            self.emit("session_info", {"name": "Refactor " + self.rng.choice(MODULES)})
        self.turn()

    def tail(self, context_entries: int) -> None:
        """Write a tail that depends only on the seed, ending in a leaf whose context has context_entries."""
        self.rng = random.Random(f"{self.seed}-tail")
        self.auto = False
        self.model = MODELS[0]
        self.emit("model_change", {"provider": self.model[0], "modelId": self.model[1]})
        start = self.count
        first_kept = len(self.path_ids)
        while self.count - start < context_entries // 2:
            self.turn()
        self.compact(first_kept)
        while self.count - start < context_entries:
            self.turn()


def _build_corpus(rng: random.Random, lines: int = 6_000) -> list[str]:
    """Return code, test-output and log lines to slice tool results from."""
    out: list[str] = []
    for n in range(lines):
        kind = rng.random()
        mod, fn, noun = rng.choice(MODULES), rng.choice(FUNCS), rng.choice(NOUNS)
        if kind < 0.45:
            indent = "    " * rng.randint(0, 3)
            out.append(f"{indent}{noun} = {fn}_{noun}({rng.choice(NOUNS)}, limit={rng.randint(1, 4096)})")
        elif kind < 0.55:
            out.append(f"def {fn}_{noun}(self, {noun}: {noun.capitalize()}) -> {mod.capitalize()}Result:")
        elif kind < 0.7:
            status = rng.choice(("PASSED", "PASSED", "PASSED", "FAILED", "SKIPPED"))
            out.append(f"tests/{mod}/test_{noun}.py::test_{fn}_{noun}_{n % 97} {status}")
        elif kind < 0.85:
            level = rng.choice(("INFO", "DEBUG", "WARN", "ERROR"))
            out.append(
                f"2026-03-01T10:{n % 60:02d}:{rng.randint(0, 59):02d}Z {level} {mod}: {fn} {noun} id={n}"
            )
        else:
            out.append(f"# {' '.join(rng.choice(WORDS) for _ in range(rng.randint(4, 14)))}")
    return out


def iter_entries(path: Path) -> Iterator[dict[str, object]]:
    """Yield the parsed lines of a session file, header first."""
    with path.open("rb") as fh:
        for line in fh:
            if line.strip():
                yield orjson.loads(line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", default=list(SIZES), help="1k, 10k, 100k or an entry count")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--context-entries", type=int, default=None)
    parser.add_argument(
        "--stdout", action="store_true", help="write the session to stdout instead of the cache"
    )
    args = parser.parse_args(argv)
    for size in args.sizes:
        entries = SIZES[size] if size in SIZES else int(size)
        spec = SessionSpec(entries=entries, seed=args.seed, context_entries=args.context_entries)
        if args.stdout:
            write_session(spec, sys.stdout.buffer)
            continue
        result = ensure_session(spec)
        meta = result.meta
        print(
            f"{result.path}: {meta['entries']} entries, {int(meta['bytes']) / 1e6:.1f} MB, "
            f"leaf depth {meta['leaf_depth']}, {meta['rewinds']} rewinds, {meta['compactions']} compactions"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
