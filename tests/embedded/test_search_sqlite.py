"""Search in the embedded mode (no DATABASE_URL: SQLite): the same answers' shape as on PostgreSQL, words
matched as substrings, every hit of a session in tree order, inside a share link's scope.

The suite runs on PostgreSQL, so the embedded configuration runs in a child process with its own data
folder: it migrates a fresh SQLite file, stores sessions through the use cases, asks the API, and prints
what it got.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests import procs
from tests.factories import APPEND_ORDER, TREE_ORDER

SCRIPT = r"""
import json
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.conf import settings
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient
from sessions_app import services
from tests.factories import HEADER, branched, session_file

assert settings.DATABASES["default"]["ENGINE"].endswith("sqlite3")
owner = get_user_model().objects.create_user("ada", password="pw")
data = session_file(branched(), {**HEADER, "id": "hits"})
session = services.import_jsonl(actor=owner, data=data, filename="hits.jsonl").session
other = services.import_jsonl(
    actor=owner, data=session_file(branched()[:2], {**HEADER, "id": "two"}), filename="two.jsonl"
).session
frozen = services.create_share_link(session=session, actor=owner, frozen=True)
message = {"role": "user", "content": "a NEEDLE after the freeze", "timestamp": 1}
services.append_entries(
    session=session, actor=session.owner, entries=[{"type": "message", "message": message}]
)

def pages(client, q):
    ids, offset = [], 0
    while True:
        params = {"q": q, "offset": offset, "limit": 4}
        body = client.get(f"/api/sessions/{session.pk}/search/", params).json()
        if not body["hits"]:
            return ids, body["total"]
        ids += [h["entryId"] for h in body["hits"]]
        offset += len(body["hits"])

member = APIClient(SERVER_NAME="localhost")
member.force_authenticate(user=owner)
holder = APIClient(SERVER_NAME="localhost")
holder.credentials(HTTP_X_SHARE_TOKEN=frozen.raw_token)
across = member.get("/api/search/", {"q": "needle"}).json()
print(json.dumps({
    "pks": [session.pk, other.pk],
    "across": [
        {k: s[k] for k in ("id", "hitCount", "hitCountCapped", "moreHits")}
        | {"hits": [h["entryId"] for h in s["hits"]]}
        for s in across["sessions"]
    ],
    "member": pages(member, "needle"),
    "frozen": pages(holder, "needle"),
    "two_words": pages(member, "needle on"),
    "phrase": pages(member, '"on x"'),
    "apart": pages(member, '"needle x"'),
    "without": pages(member, "needle -on"),
    "either": pages(member, "root or number"),
}))
"""


def run_embedded(tmp_path: Path) -> dict[str, Any]:
    return dict(procs.run_embedded(SCRIPT, tmp_path))


def test_search_in_the_embedded_mode(tmp_path: Path) -> None:
    got = run_embedded(tmp_path)
    session, other = got["pks"]
    assert (tmp_path / "piweb.sqlite3").exists()
    # Across sessions (the one written last first): the newest five hits and the count; the other
    # session's two hits are all it has.
    summary = [(s["id"], s["hitCount"], s["hitCountCapped"], s["moreHits"]) for s in got["across"]]
    assert summary == [(session, 14, False, True), (other, 2, False, False)]
    assert got["across"][1]["hits"] == ["a0", "u0"]
    newest = got["across"][0]["hits"]
    # The newest hit is the entry appended after the freeze (its id is made by the server), then x9…
    assert len(newest) == 5 and newest[0] not in TREE_ORDER and newest[1:] == ["x9", "x8", "x7", "x6"]
    # In the session, page after page: every hit in the tree's order, the appended leaf last.
    ids, total = got["member"]
    assert total == 14 and ids[:-1] == TREE_ORDER
    # A frozen link: nothing stored after the freeze, in the order of the listing the link is shown.
    assert got["frozen"] == [APPEND_ORDER, 13]
    # Words match as substrings, all of them; the entries holding both "needle" and "on".
    assert got["two_words"][0] == ["y1", "y3", "x1", "x2"]
    # The web search syntax PostgreSQL reads, here too: a phrase's words stand together, -word excludes,
    # "or" joins alternatives.
    assert got["phrase"] == [["x1", "x2"], 2]
    assert got["apart"] == [[], 0]
    without, total = got["without"]
    assert total == 10 and without[:-1] == ["u0", "a0", *(f"x{i}" for i in range(3, 10))]
    assert got["either"] == [["u0", *(f"x{i}" for i in range(3, 10))], 8]


WORK_SCRIPT = r"""
import json
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient
from sessions_app import services
from tests.factories import FILES_HEADER, session_file, tool_turn, two_branches_with_files

owner = get_user_model().objects.create_user("ada", password="pw")
data = session_file(two_branches_with_files(), FILES_HEADER)
session = services.import_jsonl(actor=owner, data=data, filename="f.jsonl").session
call, result = tool_turn("k1", "c4-r", "edit", {"path": "lib/x.py", "oldText": "a", "newText": "b"})
services.append_entries(session=session, actor=owner, entries=[call])
services.append_entries(session=session, actor=owner, entries=[result])
member = APIClient(SERVER_NAME="localhost")
member.force_authenticate(user=owner)

def across(q):
    body = member.get("/api/search/", {"q": q}).json()
    return [[h["entryId"] for h in s["hits"]] for s in body["sessions"]]

def one(q):
    return member.get(f"/api/sessions/{session.pk}/search/", {"q": q}).json()["total"]

print(json.dumps({
    "exact": across("path:shared.txt"),
    "glob": across("path:src/**/*.py"),
    "name": across("path:*.py"),
    "cmd": across("cmd:make"),
    "appended": across("tool:edit path:lib/"),
    "one": one("path:*.txt"),
}))
"""


def test_search_by_work_in_the_embedded_mode(tmp_path: Path) -> None:
    got = dict(procs.run_embedded(WORK_SCRIPT, tmp_path))
    assert got == {
        "exact": [["c1-r", "c0-r"]],
        "glob": [["c4-r"]],
        "name": [["k1-r", "c4-r"]],
        "cmd": [["c3-r"]],
        "appended": [["k1-r"]],
        "one": 3,
    }


FILES_SCRIPT = r"""
import json
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.contrib.auth import get_user_model
from sessions_app import services
from sessions_app.models import ChatSession, FileStep
from tests.api.test_file_steps import answers, random_tree, walked
from tests.factories import FILES_HEADER, session_file

owner = get_user_model().objects.create_user("ada", password="pw")
entries = random_tree(5, turns=30)
data = session_file(entries[:60], FILES_HEADER)
session = services.import_jsonl(actor=owner, data=data, filename="f.jsonl").session
for entry in entries[60:]:
    services.append_entries(session=session, actor=owner, entries=[entry])
session = ChatSession.objects.get(pk=session.pk)
stepped = answers(session)
print(json.dumps({
    "steps": FileStep.objects.filter(session=session).count(),
    "kept through": session.file_steps_through == session.next_seq - 1,
    "files at the leaf": stepped[entries[-1]["id"]]["fileCount"],
    "same as the walk": stepped == walked(session),
}))
"""


def test_the_files_view_from_kept_steps_in_the_embedded_mode(tmp_path: Path) -> None:
    got = dict(procs.run_embedded(FILES_SCRIPT, tmp_path))
    assert got["steps"] > 0 and got["files at the leaf"] > 0
    assert got["kept through"] is True
    assert got["same as the walk"] is True
