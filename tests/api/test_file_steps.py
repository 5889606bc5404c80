"""The files view from the steps kept at write time answers exactly what walking the branch answers.

Random trees of tool turns (whole and partial reads, writes, edits that apply exactly, loosely or not at
all, failed calls, parallel calls, the model's and the user's shell commands) are stored whole (import)
and entry by entry (appends), and every node's files and every file's diffs and text are compared with
the walk's answer for the same node. Then the ways steps can go missing or stale: a session stored
before the steps, the previous release appending, and a redaction.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from django.core.cache import caches
from django.db import connection
from django.test.utils import CaptureQueriesContext

from governance.redaction import redact_findings
from sessions_app import branch_files, file_steps, services
from sessions_app.models import ChatSession, Entry, FileStep, ToolUse
from sessions_app.services import tool_index
from sessions_app.services.reconcile import reconcile_session
from tests.factories import FILES_HEADER, session_file, tool_turn, user_message

pytestmark = pytest.mark.django_db

PATHS = ("a.txt", "src/b.py", "/w/src/b.py", "/elsewhere/c.md", "@a.txt", "d.txt")
WORDS = ("alpha", "beta", "gamma", "delta", "eps")


def _text(rng: random.Random) -> str:
    lines = [rng.choice(WORDS) + str(rng.randint(0, 3)) for _ in range(rng.randint(1, 6))]
    return "\n".join(lines) + ("\n" if rng.random() < 0.8 else "")


def _call(rng: random.Random, call_id: str, known: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A tool call and its result's fields, about files the branch may know."""
    path = rng.choice(PATHS)
    tool = rng.choice(("read", "read", "write", "edit", "edit", "bash"))
    result: dict[str, Any] = {"content": [{"type": "text", "text": "ok"}], "isError": rng.random() < 0.1}
    if tool == "read":
        args: dict[str, Any] = {"path": path}
        if rng.random() < 0.3:
            args["offset"] = rng.randint(2, 4)
        result["content"] = [{"type": "text", "text": known.get(path) or _text(rng)}]
    elif tool == "write":
        args = {"path": path, "content": _text(rng) if rng.random() < 0.95 else 7}
    elif tool == "edit":
        current = known.get(path, "")
        if current and rng.random() < 0.6:  # an edit that applies to what the branch knows
            old = rng.choice(current.split("\n")[:-1] or [current])
            args = {"path": path, "edits": [{"oldText": old, "newText": rng.choice(WORDS)}]}
        elif rng.random() < 0.2:
            args = {"path": path, "edits": []}  # a touch without a change
        else:
            args = {"path": path, "oldText": rng.choice(WORDS), "newText": _text(rng)}
            if rng.random() < 0.5:
                result["details"] = {
                    "patch": f"--- a\n+++ b\n@@ -1,1 +1,2 @@\n-{rng.choice(WORDS)}\n+x\n+y\n"
                }
    else:
        args = {"command": rng.choice(("make", "git status", "ls -la"))}
    return {"type": "toolCall", "id": call_id, "name": tool, "arguments": args}, {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": tool,
        **result,
        "timestamp": 3,
    }


def random_tree(seed: int, turns: int = 40) -> list[dict[str, Any]]:
    """A session of ``turns`` tool rounds, each under a random earlier entry (so it branches)."""
    rng = random.Random(seed)
    entries: list[dict[str, Any]] = [user_message("u0", None, "start")]
    known: dict[str, str] = {}
    for turn in range(turns):
        parent = rng.choice(entries[-6:] if rng.random() < 0.7 else entries)["id"]
        if rng.random() < 0.1:
            entries.append(
                {
                    "type": "message",
                    "id": f"x{turn}",
                    "parentId": parent,
                    "timestamp": "2026-01-02T03:04:07.000Z",
                    "message": {
                        "role": "bashExecution",
                        "command": "make check",
                        "output": "",
                        "exitCode": rng.choice((0, 1, None)),
                        "cancelled": rng.random() < 0.2,
                        "timestamp": 2,
                    },
                }
            )
            continue
        calls = [_call(rng, f"t{turn}-{i}", known) for i in range(rng.randint(1, 3))]
        for block, _ in calls:
            args = block["arguments"]
            if block["name"] == "write" and isinstance(args.get("content"), str):
                known[args["path"]] = args["content"]
        assistant = {
            "type": "message",
            "id": f"a{turn}",
            "parentId": parent,
            "timestamp": "2026-01-02T03:04:07.000Z",
            "message": {
                "role": "assistant",
                "content": [block for block, _ in calls],
                "stopReason": "toolUse",
                "timestamp": 2,
            },
        }
        entries.append(assistant)
        above = assistant["id"]
        for i, (_, result) in enumerate(calls):
            entries.append(
                {
                    "type": "message",
                    "id": f"r{turn}-{i}",
                    "parentId": above,
                    "timestamp": "2026-01-02T03:04:08.000Z",
                    "message": result,
                }
            )
            above = f"r{turn}-{i}"
    return entries


def answers(session: ChatSession) -> dict[str, Any]:
    """Every node's files, and every listed file's diffs and text, as the API builds them."""
    caches["shared"].clear()
    session = ChatSession.objects.get(pk=session.pk)
    out: dict[str, Any] = {}
    for leaf in Entry.objects.filter(session=session).exclude(depth=None).order_by("seq"):
        listed = branch_files.files_at(session, leaf)
        out[leaf.entry_id] = listed
        for item in listed["files"]:
            out[f"{leaf.entry_id} {item['path']}"] = branch_files.file_detail(session, leaf, item["absolute"])
    return out


def walked(session: ChatSession) -> dict[str, Any]:
    """The same answers from walking every branch (as for a session whose steps are not kept)."""
    mark = ChatSession.objects.get(pk=session.pk).file_steps_through
    ChatSession.objects.filter(pk=session.pk).update(file_steps_through=None)
    try:
        return answers(session)
    finally:
        ChatSession.objects.filter(pk=session.pk).update(file_steps_through=mark)


def imported(owner: Any, entries: list[dict[str, Any]], name: str = "files-1") -> ChatSession:
    header = {**FILES_HEADER, "id": name}
    return services.import_jsonl(actor=owner, data=session_file(entries, header), filename="f.jsonl").session


@pytest.fixture
def owner(user: Callable[..., Any]) -> Any:
    return user("steps-owner")


@pytest.mark.parametrize("seed", range(6))
def test_a_session_stored_whole_answers_as_its_walk_on_every_node(owner: Any, seed: int) -> None:
    session = imported(owner, random_tree(seed))
    assert FileStep.objects.filter(session=session).exists()
    stepped = answers(session)
    assert any(body["files"] for key, body in stepped.items() if " " not in key)
    assert stepped == walked(session)


@pytest.mark.parametrize("seed", range(6, 9))
def test_a_session_appended_entry_by_entry_answers_as_its_walk(owner: Any, seed: int) -> None:
    entries = random_tree(seed, turns=25)
    session = imported(owner, entries[:1], name=f"appended-{seed}")
    rng = random.Random(seed)
    at = 1
    while at < len(entries):
        # One entry, or an entry with the results chained below it (as a run stores a turn).
        size = 1
        while at + size < len(entries) and entries[at + size]["parentId"] == entries[at + size - 1]["id"]:
            size += 1
        size = size if rng.random() < 0.5 else 1
        services.append_entries(session=session, entries=entries[at : at + size], actor=owner)
        at += size
    session.refresh_from_db()
    assert session.file_steps_through == session.next_seq - 1
    assert answers(session) == walked(session)
    # The same session stored whole keeps the same steps.
    whole = imported(owner, entries, name=f"whole-{seed}")
    columns = ("seq", "kind", "absolute", "added", "removed", "known", "resets", "prev_seq", "command")
    assert list(FileStep.objects.filter(session=session).order_by("seq").values_list(*columns)) == list(
        FileStep.objects.filter(session=whole).order_by("seq").values_list(*columns)
    )


def test_the_list_at_a_node_reads_no_line_of_the_branch(owner: Any) -> None:
    session = imported(owner, random_tree(3, turns=60))
    leaf = Entry.objects.get(session=session, seq=session.leaf_seq)
    caches["shared"].clear()
    with CaptureQueriesContext(connection) as queries:
        listed = branch_files.files_at(ChatSession.objects.get(pk=session.pk), leaf)
    assert listed["fileCount"] > 0
    entry_table = Entry._meta.db_table
    assert not [q["sql"] for q in queries.captured_queries if f'FROM "{entry_table}"' in q["sql"]]


def test_steps_missing_after_the_previous_release_appended_are_walked_until_reconciled(owner: Any) -> None:
    entries = random_tree(11, turns=30)
    session = imported(owner, entries[:20], name="old-release")
    # The previous release appends without keeping steps: its rows have none and the mark stays.
    services.append_entries(session=session, entries=entries[20:30], actor=owner)
    FileStep.objects.filter(session=session, seq__gte=20).delete()
    ChatSession.objects.filter(pk=session.pk).update(file_steps_through=19)
    services.append_entries(session=session, entries=entries[30:], actor=owner)
    session.refresh_from_db()
    assert session.file_steps_through == 19  # past a gap, steps are never trusted
    expected = walked(session)
    assert answers(session) == expected
    assert "file steps" in reconcile_session(session.pk)
    session.refresh_from_db()
    assert session.file_steps_through == session.next_seq - 1
    assert answers(session) == expected
    assert "file steps" not in reconcile_session(session.pk)


def test_a_session_from_before_the_steps_gets_them_from_reconcile(owner: Any) -> None:
    session = imported(owner, random_tree(12), name="before")
    FileStep.objects.filter(session=session).delete()
    ChatSession.objects.filter(pk=session.pk).update(file_steps_through=None)
    expected = walked(session)
    assert "file steps" in reconcile_session(session.pk)
    assert FileStep.objects.filter(session=session).exists()
    assert answers(session) == expected


def test_a_redacted_line_rewrites_the_steps_worked_out_from_it(
    owner: Any, django_capture_on_commit_callbacks: Any
) -> None:
    secret = "ghp_" + "R4nd0mL00k1ngT0k3nV4lu3F0rT3st1ng007"
    entries = [
        user_message("u0", None, "start"),
        *tool_turn("w", "u0", "write", {"path": "k.txt", "content": f"token={secret}\nline\n"}),
        *tool_turn("e", "w-r", "edit", {"path": "k.txt", "edits": [{"oldText": "line", "newText": "l2"}]}),
    ]
    with django_capture_on_commit_callbacks(execute=True):  # the scan runs once the import commits
        session = imported(owner, entries, name="redacted")
    before = answers(session)
    assert secret in str(before)
    with django_capture_on_commit_callbacks(execute=True):
        assert redact_findings(actor=owner, session=session)
    body = answers(session)
    assert secret not in str(body)
    assert body == walked(session)
    detail = body["e-r k.txt"]["file"]
    assert detail["contentKnown"] and detail["content"].endswith("l2\n")


@pytest.mark.django_db(transaction=True)
def test_appends_without_tool_results_leave_no_gap(user: Callable[..., Any]) -> None:
    """Outside a caller's transaction an append holding no tool result or command is stored without
    telling the steps (it makes none): the steps still reach every node after it."""
    owner = user("steps-fast")
    entries = random_tree(21, turns=30)
    session = imported(owner, entries[:10], name="fast-path")
    tail = entries[10:]
    for entry in tail:
        services.append_entries(session=session, entries=[entry], actor=owner)
    session.refresh_from_db()
    roles = [e["message"]["role"] for e in tail]
    assert "assistant" in roles and "toolResult" in roles
    last = Entry.objects.get(session=session, seq=session.next_seq - 1)
    assert branch_files._path(session, last) is not None  # summed, not walked
    assert answers(session) == walked(session)


@pytest.mark.parametrize("seed", range(30, 34))
def test_a_whole_session_counts_its_changed_files_from_its_steps(owner: Any, seed: int) -> None:
    """The session list's count of changed files, named by the steps of an import, is what reading
    every tool result again gives."""
    from sessions_app.changed_files import count_session
    from sessions_app.models import ChangedFile

    session = imported(owner, random_tree(seed), name=f"count-{seed}")
    session.refresh_from_db()
    paths = set(ChangedFile.objects.filter(session=session).values_list("path", flat=True))
    assert paths and session.files_changed == len(paths)
    ChangedFile.objects.filter(session=session).delete()
    count_session(session)
    assert set(ChangedFile.objects.filter(session=session).values_list("path", flat=True)) == paths


# Every column a step stores but its session's id: two imports of one file store the same steps.
STEP_COLUMNS = tuple(name for name in file_steps._COLUMNS if name != "session_id")


def _steps(session: ChatSession) -> list[tuple[Any, ...]]:
    return list(FileStep.objects.filter(session=session).order_by("seq").values_list(*STEP_COLUMNS))


@pytest.mark.parametrize(("seed", "flush"), [(40, 1000), (41, 7), (42, 1)])
def test_an_import_works_its_steps_out_as_reading_its_lines_back_does(
    owner: Any, seed: int, flush: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The steps an import works out while its rows are copied in are those its stored lines give,
    however many wait on disk meanwhile (``flush`` steps at a time)."""
    monkeypatch.setattr(file_steps, "FLUSH_ROWS", flush)
    session = imported(owner, random_tree(seed), name=f"inline-{seed}")
    inline = _steps(session)
    assert inline
    session.refresh_from_db()
    file_steps.rebuild(session)
    assert _steps(session) == inline


def test_an_import_without_its_texts_at_hand_reads_its_lines_back(
    owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the files' earlier texts at hand, a branch that goes back to an older text needs a stored
    line: the import then works every step out from its stored lines, with the same answers."""
    entries = random_tree(5, turns=60)
    kept = imported(owner, entries, name="texts-kept")
    monkeypatch.setattr(file_steps._Writer, "_kept_text", lambda self, seq: None)
    read_back: list[int] = []
    original = file_steps.record_new
    monkeypatch.setattr(file_steps, "record_new", lambda s: (read_back.append(s.pk), original(s))[1])
    lost = imported(owner, entries, name="texts-lost")
    assert read_back == [lost.pk]
    assert _steps(lost) == _steps(kept)
    assert answers(lost) == walked(lost)


def _tool_rows(session: ChatSession) -> list[tuple[Any, ...]]:
    columns = ("call_seq", "call_id", "tool", "path", "absolute", "command", "result_seq", "failed")
    return sorted(
        ToolUse.objects.filter(session=session).values_list(*columns),
        key=lambda row: tuple("" if v is None else str(v) for v in row),
    )


@pytest.mark.parametrize("spool_rows", [2000, 3, 1])
def test_an_import_indexes_its_tool_calls_as_appending_them_one_by_one_does(
    owner: Any, spool_rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index of work an import writes while reading its lines (calls paired with their results and
    ``spool_rows`` rows at a time kept on disk) is the one appends build entry by entry: a result without
    its call, a call never answered and a call id used twice included."""
    monkeypatch.setattr(tool_index, "SPOOL_ROWS", spool_rows)
    entries = random_tree(9, turns=30)
    stray = tool_turn("stray", entries[-1]["id"], "read", {"path": "a.txt"})
    stray[1]["message"]["toolCallId"] = "no-such-call"  # answers nothing
    again = tool_turn("again", stray[1]["id"], "read", {"path": "src/b.py"})
    again[0]["message"]["content"][0]["id"] = "stray"  # the id of a call still unanswered
    again[1]["message"]["toolCallId"] = "stray"
    unanswered = tool_turn("open", again[1]["id"], "bash", {"command": "sleep 9"})[0]
    entries += [*stray, *again, unanswered]
    whole = imported(owner, entries, name=f"tools-whole-{spool_rows}")
    one_by_one = imported(owner, entries[:1], name=f"tools-appended-{spool_rows}")
    for entry in entries[1:]:
        services.append_entries(session=one_by_one, entries=[entry], actor=owner)
    rows = _tool_rows(whole)
    assert rows == _tool_rows(one_by_one)
    by_call = {(row[0], row[1]): row for row in rows}
    seqs = {e["id"]: seq for seq, e in enumerate(entries)}
    assert by_call[seqs["again-a"], "stray"][6] == seqs["again-r"]  # the newer call took the result
    assert by_call[seqs["stray-a"], "stray"][6] is None
    assert by_call[seqs["open-a"], _call_id(unanswered)][6] is None
    assert not any(row[6] == seqs["stray-r"] for row in rows)


def _call_id(assistant: dict[str, Any]) -> str:
    return str(assistant["message"]["content"][0]["id"])
