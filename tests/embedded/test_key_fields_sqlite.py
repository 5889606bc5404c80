"""Key field caps in the embedded mode (SQLite): the same 400 naming the field as on PostgreSQL for append,
sync and import, and a lone surrogate in an id (raw JSON) answers 400 instead of failing the response."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests import procs

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
from sessions_app.models import Entry
from tests.factories import HEADER, line, session_file, small_tree

assert settings.DATABASES["default"]["ENGINE"].endswith("sqlite3")
owner = get_user_model().objects.create_user("ada", password="pw")
session = services.import_jsonl(actor=owner, data=session_file(small_tree())).session
client = APIClient(SERVER_NAME="localhost")
client.force_authenticate(user=owner)
message = {"role": "user", "content": "x"}
url = f"/api/sessions/{session.pk}/append/"

def answer(response):
    return [response.status_code, response.json().get("error", "")]

out = {}
def append(entry):
    body = {"entries": [{"type": "message", "message": message, **entry}]}
    return answer(client.post(url, body, format="json"))

def append_raw(field, escaped):
    body = '{"entries": [{"type": "message", "%s": "%s", "message": {"role": "user"}}]}' % (field, escaped)
    return answer(client.post(url, data=body, content_type="application/json"))

out["long_id"] = append({"id": "9" * 9000})
out["long_parent"] = append({"parentId": "9" * 9000})
out["surrogate_id"] = append_raw("id", "\\ud800")
out["surrogate_parent"] = append_raw("parentId", "\\udc00")
long = {"type": "message", "id": "9" * 9000, "parentId": None, "timestamp": "t", "message": message}
lines = [line(long)]
sync = {"header": line({**HEADER, "id": "synced"}), "from": {"lines": 0, "bytes": 0},
        "to": {"lines": 1, "bytes": len(lines[0]) + 1}, "lines": lines}
out["sync"] = answer(client.post("/api/sync/", sync, format="json"))
data = session_file([*small_tree()[:2], {**small_tree()[2], "id": "x" * 1_000_000}], {**HEADER, "id": "big"})
out["import"] = answer(client.post("/api/sessions/import/", data=data, content_type="application/x-ndjson"))
out["stored"] = Entry.objects.count()
print(json.dumps(out))
"""


def run_embedded(tmp_path: Path) -> dict[str, Any]:
    return dict(procs.run_embedded(SCRIPT, tmp_path))


def test_caps_and_surrogates_answer_400_with_the_field_in_the_embedded_mode(tmp_path: Path) -> None:
    got = run_embedded(tmp_path)
    assert got["long_id"] == [400, "entry 0: 'id' is longer than 255 characters"]
    assert got["long_parent"] == [400, "entry 0: 'parentId' is longer than 255 characters"]
    surrogate = "holds a NUL character or a lone surrogate, which cannot be stored"
    assert got["surrogate_id"] == [400, f"entry 0: 'id' {surrogate}"]
    assert got["surrogate_parent"] == [400, f"entry 0: 'parentId' {surrogate}"]
    assert got["sync"][0] == 400 and "'id' is longer than 255 characters" in got["sync"][1]
    assert got["import"][0] == 400 and "line 4: 'id' is longer than 255 characters" in got["import"][1]
    assert got["stored"] == 6
