"""The files of a branch: what Pi's file tools read and changed on the path root → a node.

Pi records each tool call in an assistant message (a ``toolCall`` block: ``id``, ``name``,
``arguments``) and its outcome in a later ``toolResult`` message with the same ``toolCallId``. The four
built-in tools that touch files take these arguments (Pi 1.6.0, ``dist/core/tools``):

- ``read``: ``path``, optional ``offset`` and ``limit`` (1-based lines). Without them and without a
  ``details.truncation``, the result's text is the whole file, byte for byte.
- ``edit``: ``path`` and ``edits: [{oldText, newText}]``, every ``oldText`` matched once against the file
  as it was before the call; older sessions send one top-level ``oldText``/``newText`` (Pi still accepts
  both, and ``edits`` as a JSON string or a single object). Its result's ``details.patch`` is Pi's
  unified diff of the change.
- ``write``: ``path`` and ``content``: the whole new file (created with its folders when missing).
- ``bash``: ``command``: it may change any file; which ones, no record says.

Paths are relative to the session's working folder or absolute; a leading ``@`` is dropped, as Pi does.

Rules, chosen so that nothing is guessed:

- Only a call with its result on the branch counts: a call whose result lies past the node (or never came)
  did not visibly happen yet. A result with ``isError: true`` (an edit whose ``oldText`` was not found, an
  aborted write) changed nothing and is not a change.
- *created*: the first successful touch of the path on the branch is a ``write``. Pi's result does not
  say whether the file existed before; as far as the branch knows, it did not. Its lines count as added.
- The content at the node is known when the branch last read the file whole or wrote it whole and every
  later edit applied exactly to that text (each ``oldText`` found once). Otherwise (an edit of a file
  the branch never read or wrote whole, a partial read, an edit Pi matched only loosely) it is unknown
  and said to be: never reconstructed from pieces. ``bash`` commands after the content became known are
  counted beside it (``commands_since``): they may have changed the file.
- +/− counts are line counts of a line diff (``difflib``; a missing final newline counts as a changed
  line, as ``git diff`` counts it): of the whole file when its content before the change is known, else
  of Pi's own patch of the edit, else of each ``oldText`` against its ``newText``.
- A ``context_edit`` that omits a tool result from the model's context does not undo what the tool did
  on disk: its changes still count.
"""

from __future__ import annotations

import difflib
import itertools
import json
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "BranchFiles",
    "Change",
    "ChangeTotals",
    "Command",
    "FileTouch",
    "FilesWalk",
    "Hunk",
    "Step",
    "branch_files",
    "call_target",
    "changed_path",
    "edits_of",
    "file_calls",
    "line_diff",
    "normalize_path",
    "split_lines",
    "user_command",
]

Kind = Literal["read", "edited", "written", "created"]
CONTEXT_LINES = 3
_UNICODE_SPACES = re.compile("[\u00a0\u2000-\u200a\u202f\u205f\u3000]")
_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)  # no slots: kept walks are pickled, and slotted dataclasses unpickle slowly
class Hunk:
    """A run of changed lines with their context. ``lines`` start with " ", "-" or "+"; the starts are
    1-based lines in the file when ``numbered``, else within the edited text (where in the file is
    not known)."""

    old_start: int
    old_count: int
    new_start: int
    new_count: int
    lines: list[str]


@dataclass(frozen=True)
class Change:
    """One successful edit or write of a file, anchored to the entry that recorded it."""

    entry_id: str  # the tool result's entry
    call_entry_id: str | None  # the assistant entry that asked for it
    kind: Kind
    added: int
    removed: int
    hunks: list[Hunk]
    numbered: bool
    position: int  # index on the branch, for ordering


class ChangeTotals:
    """Lines added and removed over ``changes`` (a list of ``Change``)."""

    changes: list[Change]

    @property
    def added(self) -> int:
        return sum(c.added for c in self.changes)

    @property
    def removed(self) -> int:
        return sum(c.removed for c in self.changes)


@dataclass
class FileTouch(ChangeTotals):
    """Everything the branch did to one path."""

    path: str  # as shown: relative to the working folder when inside it
    absolute: str
    kinds: set[str] = field(default_factory=set)
    changes: list[Change] = field(default_factory=list)  # oldest first
    reads: list[str] = field(default_factory=list)  # entry ids of successful reads
    content: str | None = None
    content_entry_id: str | None = None  # the read, write or edit that made the content known
    commands_since: int = 0  # bash commands run after the content became known (set at the end)
    commands_before: int = 0  # commands run before the content became known
    last_position: int = -1
    last_entry_id: str | None = None

    @property
    def content_known(self) -> bool:
        return self.content is not None


@dataclass(frozen=True)
class Command:
    """A shell command run on the branch: by the model (``bash`` tool) or by the user (``!command``)."""

    entry_id: str
    command: str
    is_error: bool
    by_user: bool


@dataclass(frozen=True, slots=True)
class Step:
    """What one entry on a branch did to one file, or the shell command it ran, as the walk down its
    path saw it. It depends only on the path root → that entry, which never changes (entries are
    appended, never moved), so it can be kept once written; the files at a node are these steps summed.

    ``kind``: ``read``, ``created``, ``written``, ``edited``, ``touched`` (a call the file view counts
    as a touch but not a change: an edit without edits, a write without text) or ``command``.
    """

    kind: str
    absolute: str = ""  # "" for a command
    path: str = ""
    added: int = 0
    removed: int = 0
    known: bool = False  # the file's content is known after this step
    resets: bool = False  # the content became known, or unknown, here: commands since count from here
    failed: bool = False  # a command's
    by_user: bool = False  # a command the user ran (``!command``)
    command: str = ""


@dataclass(frozen=True, slots=True)
class BranchFiles:
    files: list[FileTouch]  # the most recently touched first
    commands: list[Command]  # oldest first

    def file(self, path: str) -> FileTouch | None:
        """Return the file shown as ``path`` (or with that absolute path)."""
        for touch in self.files:
            if path in (touch.path, touch.absolute):
                return touch
        return None


# -- lines and diffs -----------------------------------------------------------------------------------


def split_lines(text: str) -> list[str]:
    """Split on "\\n" only, each line keeping its ending (so a missing final newline differs, as in git)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def line_diff(old: str, new: str, *, context: int = CONTEXT_LINES) -> tuple[int, int, list[Hunk]]:
    """Return (added, removed, hunks) of a line diff of ``old`` → ``new``."""
    a, b = split_lines(old), split_lines(new)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    added = removed = 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            removed += i2 - i1
        if tag in ("replace", "insert"):
            added += j2 - j1
    hunks: list[Hunk] = []
    for group in matcher.get_grouped_opcodes(context):
        if all(op[0] == "equal" for op in group):
            continue
        lines: list[str] = []
        for op, i1, i2, j1, j2 in group:
            if op == "equal":
                lines.extend(" " + _bare(line) for line in a[i1:i2])
                continue
            lines.extend("-" + _bare(line) for line in a[i1:i2])
            lines.extend("+" + _bare(line) for line in b[j1:j2])
        first, last = group[0], group[-1]
        old_count, new_count = last[2] - first[1], last[4] - first[3]
        hunks.append(
            Hunk(
                old_start=first[1] + 1 if old_count else first[1],
                old_count=old_count,
                new_start=first[3] + 1 if new_count else first[3],
                new_count=new_count,
                lines=lines,
            )
        )
    return added, removed, hunks


def _bare(line: str) -> str:
    return line[:-1] if line.endswith("\n") else line


def parse_patch(patch: str) -> tuple[int, int, list[Hunk]] | None:
    """Return (added, removed, hunks) of a unified diff (Pi's ``details.patch``), or None if it has none."""
    hunks: list[Hunk] = []
    current: list[str] | None = None
    added = removed = 0
    header: tuple[int, int, int, int] | None = None

    def close() -> None:
        if header is not None and current is not None:
            hunks.append(Hunk(header[0], header[1], header[2], header[3], current))

    for line in patch.split("\n"):
        found = _HUNK_HEADER.match(line)
        if found:
            close()
            old_start, old_count, new_start, new_count = found.groups()
            header = (
                int(old_start),
                1 if old_count is None else int(old_count),
                int(new_start),
                1 if new_count is None else int(new_count),
            )
            current = []
            continue
        if current is None or not line:
            continue
        if line[0] == "+":
            added += 1
        elif line[0] == "-":
            removed += 1
        elif line[0] != " ":
            continue  # "\ No newline at end of file"
        current.append(line)
    close()
    return (added, removed, hunks) if hunks else None


# -- tool arguments --------------------------------------------------------------------------------------


def normalize_path(path: str, cwd: str) -> str:
    """Return the absolute, normalized form of a tool's ``path`` (``~`` paths stay as written)."""
    path = _UNICODE_SPACES.sub(" ", path.strip())
    if path.startswith("@"):
        path = path[1:]
    if path.startswith("~"):
        return posixpath.normpath(path)
    if not posixpath.isabs(path) and cwd:
        path = posixpath.join(cwd, path)
    return posixpath.normpath(path)


def _shown(absolute: str, cwd: str) -> str:
    if cwd and posixpath.isabs(absolute):
        base = posixpath.normpath(cwd)
        if absolute.startswith(base.rstrip("/") + "/"):
            return posixpath.relpath(absolute, base)
    return absolute


def edits_of(arguments: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Return an edit call's (oldText, newText) pairs, in the shapes Pi accepts (see the module's notes)."""
    raw: Any = arguments.get("edits")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raw = None
    if isinstance(raw, Mapping):
        raw = [raw]
    pairs: list[tuple[str, str]] = []
    if isinstance(raw, list):
        for item in raw:
            if isinstance(item, Mapping):
                old, new = item.get("oldText"), item.get("newText")
                if isinstance(old, str) and isinstance(new, str):
                    pairs.append((old, new))
    old, new = arguments.get("oldText"), arguments.get("newText")
    if isinstance(old, str) and isinstance(new, str):
        pairs.append((old, new))
    return pairs


def _apply_exactly(content: str, edits: Sequence[tuple[str, str]]) -> str | None:
    """Apply the edits as Pi does when each ``oldText`` is found once, exactly; None when one is not
    (Pi then matches loosely, or normalizes line endings: the result is not known for sure)."""
    if "\r" in content:
        return None
    spans: list[tuple[int, int, str]] = []
    for old, new in edits:
        if not old or content.count(old) != 1:
            return None
        start = content.index(old)
        spans.append((start, start + len(old), new))
    spans.sort()
    for (_, end, _), (start, _, _) in itertools.pairwise(spans):
        if start < end:
            return None
    for start, end, new in reversed(spans):
        content = content[:start] + new + content[end:]
    return content


def _result_text(message: Mapping[str, Any]) -> str | None:
    """Return the result's text when it is text only (an image read is not a file's text)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts: list[str] = []
    for block in content:
        if (
            not isinstance(block, Mapping)
            or block.get("type") != "text"
            or not isinstance(block.get("text"), str)
        ):
            return None
        texts.append(block["text"])
    return "".join(texts)


def _whole_read(arguments: Mapping[str, Any], message: Mapping[str, Any]) -> str | None:
    """Return the file's text if the read returned all of it, else None."""
    if arguments.get("offset") not in (None, 0, 1) or arguments.get("limit") is not None:
        return None
    details = message.get("details")
    if isinstance(details, Mapping) and details:
        return None  # a truncation, or an image the model could not take
    return _result_text(message)


# -- the walk ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Call:
    entry_id: str | None
    name: str
    arguments: Mapping[str, Any]


FILE_TOOLS = frozenset({"read", "edit", "write", "bash"})


def branch_files(entries: Iterable[Mapping[str, Any]], cwd: str = "") -> BranchFiles:
    """Return the files the branch's tool calls touched. ``entries`` are the parsed lines of the path,
    root first (other lines may be among them and are skipped); ``cwd`` is the session header's."""
    walk = FilesWalk(cwd)
    walk.feed(entries)
    return walk.result()


class FilesWalk:
    """The walk down a branch, resumable: fed the path root first, in as many parts as wanted, it gives
    the same result as one ``branch_files`` over the whole. Its state (calls still waiting for their
    result, each file so far) is plain data, so a reader can keep it for a node and go on from there to
    a node below it, reading only the entries between them."""

    def __init__(self, cwd: str = "", *, steps: bool = False) -> None:
        self.cwd = cwd
        self.calls: dict[str, _Call] = {}
        self.files: dict[str, FileTouch] = {}
        self.commands: list[Command] = []
        self.position = 0
        # With ``steps``: (entry id, call's entry id, step) of each entry that did something, in order.
        self.steps: list[tuple[str, str | None, Step]] | None = [] if steps else None

    def feed(self, entries: Iterable[Mapping[str, Any]]) -> None:
        """Walk on through ``entries``, the next lines of the path in order."""
        calls, files, commands = self.calls, self.files, self.commands
        for entry in entries:
            position = self.position
            self.position += 1
            if not isinstance(entry, Mapping) or entry.get("type") != "message":
                continue
            message = entry.get("message")
            entry_id = entry.get("id") if isinstance(entry.get("id"), str) else None
            if not isinstance(message, Mapping) or entry_id is None:
                continue
            role = message.get("role")
            if role == "assistant":
                content = message.get("content")
                for block in content if isinstance(content, list) else []:
                    if not isinstance(block, Mapping) or block.get("type") != "toolCall":
                        continue
                    call_id, name, arguments = block.get("id"), block.get("name"), block.get("arguments")
                    if isinstance(call_id, str) and name in FILE_TOOLS and isinstance(arguments, Mapping):
                        calls[call_id] = _Call(entry_id, str(name), arguments)
            elif role == "toolResult":
                call = calls.pop(str(message.get("toolCallId")), None)
                if call is not None:
                    step = _record(call, message, entry_id, position, self.cwd, files, commands)
                    if step is not None and self.steps is not None:
                        self.steps.append((entry_id, call.entry_id, step))
            elif role == "bashExecution" and (step := user_command(message)) is not None:
                commands.append(Command(entry_id, step.command, step.failed, True))
                if self.steps is not None:
                    self.steps.append((entry_id, None, step))

    def seed(self, absolute: str, content: str | None) -> None:
        """Go on as if the branch above had touched ``absolute`` and left ``content`` (None: not known)."""
        self.files[absolute] = FileTouch(path=_shown(absolute, self.cwd), absolute=absolute, content=content)

    def apply_result(
        self,
        call_entry_id: str | None,
        name: str,
        arguments: Mapping[str, Any],
        message: Mapping[str, Any],
        entry_id: str,
    ) -> Step | None:
        """Walk on through one tool result whose call (in ``call_entry_id``) is already known."""
        position = self.position
        self.position += 1
        call = _Call(call_entry_id, name, arguments)
        step = _record(call, message, entry_id, position, self.cwd, self.files, self.commands)
        if step is not None and self.steps is not None:
            self.steps.append((entry_id, call_entry_id, step))
        return step

    def content_chars(self) -> int:
        """Return how much file text the walk holds (what keeping its state costs)."""
        return sum(len(f.content) for f in self.files.values() if f.content is not None)

    def result(self) -> BranchFiles:
        """Return the files so far, the most recently touched first (the walk can go on after)."""
        for touch in self.files.values():
            known = touch.content is not None
            touch.commands_since = len(self.commands) - touch.commands_before if known else 0
        ordered = sorted(self.files.values(), key=lambda f: f.last_position, reverse=True)
        return BranchFiles(ordered, list(self.commands))


def user_command(message: Mapping[str, Any]) -> Step | None:
    """Return the step of a ``bashExecution`` message (a ``!command`` the user ran), None if malformed."""
    command = message.get("command")
    if message.get("role") != "bashExecution" or not isinstance(command, str):
        return None
    exit_code = message.get("exitCode")
    failed = bool(message.get("cancelled")) or (isinstance(exit_code, int) and exit_code != 0)
    return Step("command", failed=failed, by_user=True, command=command)


def _record(
    call: _Call,
    message: Mapping[str, Any],
    entry_id: str,
    position: int,
    cwd: str,
    files: dict[str, FileTouch],
    commands: list[Command],
) -> Step | None:
    """Apply one tool result to the walk; return what it did (None: nothing the file view counts)."""
    failed = message.get("isError") is True
    args = call.arguments
    if call.name == "bash":
        if isinstance(args.get("command"), str):
            commands.append(Command(entry_id, args["command"], failed, False))
            return Step("command", failed=failed, command=args["command"])
        return None
    path = args.get("path")
    if failed or not isinstance(path, str) or not path.strip():
        return None
    absolute = normalize_path(path, cwd)
    touch = files.get(absolute)
    first = touch is None
    if touch is None:
        touch = files[absolute] = FileTouch(path=_shown(absolute, cwd), absolute=absolute)
    touch.last_position, touch.last_entry_id = position, entry_id
    resets = False

    def known(text: str | None) -> None:
        nonlocal resets
        resets = True
        touch.content = text
        touch.content_entry_id = entry_id if text is not None else None
        touch.commands_before = len(commands)

    def step(kind: str, added: int = 0, removed: int = 0) -> Step:
        known_after = touch.content is not None
        return Step(kind, absolute, touch.path, added, removed, known_after, resets)

    if call.name == "read":
        touch.kinds.add("read")
        touch.reads.append(entry_id)
        text = _whole_read(args, message)
        if text is not None:
            known(text)
        return step("read")
    if call.name == "write":
        new = args.get("content")
        if not isinstance(new, str):
            return step("touched")
        kind: Kind = "created" if first else "written"
        old = touch.content if touch.content is not None else ""
        added, removed, hunks = line_diff(old, new)
        touch.kinds.add(kind)
        touch.changes.append(Change(entry_id, call.entry_id, kind, added, removed, hunks, True, position))
        known(new)
        return step(kind, added, removed)
    # edit
    edits = edits_of(args)
    if not edits:
        return step("touched")
    after = _apply_exactly(touch.content, edits) if touch.content is not None else None
    details = message.get("details")
    patch = details.get("patch") if isinstance(details, Mapping) else None
    if touch.content is not None and after is not None:
        added, removed, hunks = line_diff(touch.content, after)
        numbered = True
    elif isinstance(patch, str) and (parsed := parse_patch(patch)) is not None:
        added, removed, hunks = parsed
        numbered = True
    else:
        added = removed = 0
        hunks = []
        for old, new in edits:
            plus, minus, part = line_diff(old, new)
            added, removed = added + plus, removed + minus
            hunks.extend(part)
        numbered = False
    touch.kinds.add("edited")
    touch.changes.append(Change(entry_id, call.entry_id, "edited", added, removed, hunks, numbered, position))
    if after is not None:
        touch.content = after
        touch.content_entry_id = entry_id
    else:
        known(None)
    return step("edited", added, removed)


# -- one change at a time (the session's changed files, kept at write time) ----------------------------------


def file_calls(message: Mapping[str, Any]) -> dict[str, tuple[str, Mapping[str, Any]]]:
    """Return an assistant message's edit and write calls: call id → (tool name, arguments)."""
    found: dict[str, tuple[str, Mapping[str, Any]]] = {}
    content = message.get("content") if message.get("role") == "assistant" else None
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, Mapping) or block.get("type") != "toolCall":
            continue
        call_id, name, arguments = block.get("id"), block.get("name"), block.get("arguments")
        if isinstance(call_id, str) and name in ("edit", "write") and isinstance(arguments, Mapping):
            found[call_id] = (str(name), arguments)
    return found


def call_target(name: str, arguments: Mapping[str, Any], cwd: str) -> str | None:
    """Return the absolute path a read, edit or write call names (None: none, or another tool)."""
    path = arguments.get("path")
    if name not in ("read", "edit", "write") or not isinstance(path, str) or not path.strip():
        return None
    return normalize_path(path, cwd)


def changed_path(name: str, arguments: Mapping[str, Any], result: Mapping[str, Any], cwd: str) -> str | None:
    """Return the absolute path an edit or write call changed, by the branch walk's rules (a failed call,
    an edit without edits, a write without content changed nothing), else None."""
    path = arguments.get("path")
    if result.get("isError") is True or not isinstance(path, str) or not path.strip():
        return None
    if name == "write" and isinstance(arguments.get("content"), str):
        return normalize_path(path, cwd)
    if name == "edit" and edits_of(arguments):
        return normalize_path(path, cwd)
    return None
