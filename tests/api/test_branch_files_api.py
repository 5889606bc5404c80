"""GET /api/sessions/<pk>/files/: the files a branch touched, one file's diffs, and who may see them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from sessions_app import services
from sessions_app.models import ChatSession, ShareLink
from tests.factories import FILES_HEADER, session_file, tool_turn, two_branches_with_files

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(user: Callable[..., Any]) -> Any:
    return user("files-owner")


@pytest.fixture
def stored(owner: Any) -> Any:
    return services.import_jsonl(
        actor=owner, data=session_file(two_branches_with_files(), FILES_HEADER), filename="f.jsonl"
    ).session


def client_of(account: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user=account)
    return client


def test_the_branch_lists_its_files_newest_first_and_one_file_gives_its_diffs_and_content(
    owner: Any, stored: Any
) -> None:
    api = client_of(owner)
    body = api.get(f"/api/sessions/{stored.pk}/files/").json()
    assert body["leafId"] == "c4-r"
    listed = [(f["path"], f["kinds"], f["added"], f["removed"], f["contentKnown"]) for f in body["files"]]
    assert listed == [
        ("src/a.py", ["created"], 1, 0, True),
        ("shared.txt", ["created", "edited"], 4, 1, True),
    ]
    assert body["commandCount"] == 1 and body["commands"][0]["command"] == "make test"
    assert "content" not in body["files"][0]  # the list stays small: no texts, no diffs
    assert (body["fileCount"], body["hasMore"]) == (2, False)
    newest = api.get(f"/api/sessions/{stored.pk}/files/", {"limit": 1}).json()
    assert ([f["path"] for f in newest["files"]], newest["fileCount"], newest["hasMore"]) == (
        ["src/a.py"],
        2,
        True,
    )

    detail = api.get(f"/api/sessions/{stored.pk}/files/", {"path": "shared.txt"}).json()["file"]
    assert detail["content"] == "one\n2\n3\n" and detail["contentEntryId"] == "c1-r"
    assert detail["commandsSince"] == 1  # `make test` ran after the edit: it may have changed the file
    assert [(c["entryId"], c["kind"], c["added"], c["removed"]) for c in detail["changes"]] == [
        ("c1-r", "edited", 2, 1),
        ("c0-r", "created", 2, 0),
    ]
    assert detail["changes"][0]["hunks"][0]["lines"] == [" one", "-two", "+2", "+3"]

    # The other branch, asked for by its leaf: its own files only.
    other = api.get(f"/api/sessions/{stored.pk}/files/", {"leaf": "c9-r"}).json()
    assert [f["path"] for f in other["files"]] == ["other.txt", "shared.txt"]
    assert other["files"][1]["kinds"] == ["created"]
    # Before the edit's result, the edit has not happened.
    before = api.get(f"/api/sessions/{stored.pk}/files/", {"leaf": "c1-a"}).json()
    assert [(f["path"], f["added"]) for f in before["files"]] == [("shared.txt", 2)]

    missing = api.get(f"/api/sessions/{stored.pk}/files/", {"path": "other.txt"})
    assert missing.status_code == 404


def test_a_path_link_sees_only_its_paths_files_and_others_see_nothing(
    owner: Any, stored: Any, user: Callable[..., Any]
) -> None:
    link = services.create_share_link(session=stored, actor=owner, scope=ShareLink.Scope.PATH)
    # The owner moves on to the other branch afterwards: the link keeps its path.
    services.navigate_without_summary(session=stored, target_id="c9-r", actor=owner)
    holder = APIClient()
    holder.credentials(HTTP_X_SHARE_TOKEN=link.raw_token)
    url = f"/api/sessions/{stored.pk}/files/"

    seen = holder.get(url).json()
    assert seen["leafId"] == "c4-r"
    assert [f["path"] for f in seen["files"]] == ["src/a.py", "shared.txt"]
    assert holder.get(url, {"leaf": "c9-r"}).status_code == 404
    assert holder.get(url, {"leaf": "c4-r", "path": "other.txt"}).status_code == 404
    assert holder.get(url, {"path": "shared.txt"}).json()["file"]["content"] == "one\n2\n3\n"

    stranger = client_of(user("stranger"))
    assert stranger.get(url).status_code == 404
    assert stranger.get(url, {"path": "shared.txt"}).status_code == 404
    assert APIClient().get(url).status_code == 403  # anonymous without a link: sign in


def test_a_frozen_link_sees_the_files_as_they_were_when_it_was_made(owner: Any, stored: Any) -> None:
    link = services.create_share_link(session=stored, actor=owner, frozen=True)
    later = [*tool_turn("c5", "c4-r", "write", {"path": "late.txt", "content": "later\n"})]
    services.append_entries(session=stored, entries=later, actor=owner)
    holder = APIClient()
    holder.credentials(HTTP_X_SHARE_TOKEN=link.raw_token)
    url = f"/api/sessions/{stored.pk}/files/"
    assert [f["path"] for f in holder.get(url).json()["files"]] == ["src/a.py", "shared.txt"]
    assert holder.get(url, {"leaf": "c5-r"}).status_code == 404
    assert next(f["path"] for f in client_of(owner).get(url).json()["files"]) == "late.txt"


def test_a_leaf_below_one_already_read_goes_on_from_it_with_the_same_answer(
    owner: Any, stored: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session whose file steps are not kept (stored before them) walks its branches instead."""
    from django.core.cache import caches

    from sessions_app import branch_files

    ChatSession.objects.filter(pk=stored.pk).update(file_steps_through=None)
    api = client_of(owner)
    url = f"/api/sessions/{stored.pk}/files/"
    order = ["c1-a", "c9-r", "c4-r", "c0-r", "c2-r", "c9-a"]
    fresh = {}
    for leaf in order:
        caches["shared"].clear()
        fresh[leaf] = (
            api.get(url, {"leaf": leaf}).json(),
            api.get(url, {"leaf": leaf, "path": "shared.txt"}).json(),
        )
    caches["shared"].clear()
    starts: list[int] = []
    real = branch_files.path_rows

    def spy(*args: Any, **kwargs: Any) -> Any:
        starts.append(kwargs.get("min_depth", 0))
        return real(*args, **kwargs)

    monkeypatch.setattr(branch_files, "path_rows", spy)
    for leaf in order:
        assert (
            api.get(url, {"leaf": leaf}).json(),
            api.get(url, {"leaf": leaf, "path": "shared.txt"}).json(),
        ) == fresh[leaf], leaf
    # c1-a (depth 4) from the root; c9-r, on another branch, from the root too; c4-r goes on below c1-a;
    # c0-r (depth 2) lies above all of them; c2-r goes on below c1-a; c9-a lies above c9-r but below c0-r.
    assert starts == [0, 0, 5, 0, 5, 3]


def test_a_file_further_down_than_the_list_builds_ahead_still_opens(
    owner: Any, stored: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sessions_app import branch_files

    monkeypatch.setattr(branch_files, "FILES_LIMIT", 1)  # only the newest file's diffs are built ahead
    api = client_of(owner)
    url = f"/api/sessions/{stored.pk}/files/"
    assert [f["path"] for f in api.get(url).json()["files"]] == ["src/a.py", "shared.txt"]
    detail = api.get(url, {"path": "/w/shared.txt"}).json()["file"]  # by its absolute path too
    assert detail["content"] == "one\n2\n3\n" and len(detail["changes"]) == 2


def compare(client: APIClient, pk: int, leaf: str, against: str) -> Any:
    return client.get(f"/api/sessions/{pk}/files/", {"leaf": leaf, "against": against})


def test_two_branches_compared_by_their_work(owner: Any, stored: Any) -> None:
    # The other branch edits the shared file too, differently.
    services.append_entries(
        session=stored,
        entries=tool_turn("c10", "c9-r", "edit", {"path": "shared.txt", "oldText": "two", "newText": "deux"}),
        actor=owner,
    )
    response = compare(client_of(owner), stored.pk, "c4-r", "c10-r")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["leafId"], body["againstId"]) == ("c4-r", "c10-r")
    assert [f["path"] for f in body["onlyLeft"]] == ["src/a.py"]
    assert [f["path"] for f in body["onlyRight"]] == ["other.txt"]
    assert body["counts"] == {"onlyLeft": 1, "onlyRight": 1, "both": 1} and body["hasMore"] is False
    assert body["sharedChanges"] == 1  # the write of shared.txt both branches start from
    [both] = body["both"]
    assert both["path"] == "shared.txt"
    assert [(c["entryId"], c["added"], c["removed"]) for c in both["left"]["changes"]] == [("c1-r", 2, 1)]
    assert [(c["entryId"], c["added"], c["removed"]) for c in both["right"]["changes"]] == [("c10-r", 1, 1)]
    assert both["right"]["changes"][0]["hunks"][0]["lines"] == [" one", "-two", "+deux"]
    assert both["sameContent"] is False
    assert both["contentDiff"]["hunks"][0]["lines"] == [" one", "-2", "-3", "+deux"]
    only = body["onlyLeft"][0]
    assert only["right"] is None and only["left"]["kinds"] == ["created"]

    # Swapped, the sides swap; the leaf defaults to the session's (c10-r since the append).
    swapped = client_of(owner).get(f"/api/sessions/{stored.pk}/files/", {"against": "c4-r"}).json()
    assert swapped["leafId"] == "c10-r"
    assert [f["path"] for f in swapped["onlyLeft"]] == ["other.txt"]
    assert [f["path"] for f in swapped["onlyRight"]] == ["src/a.py"]
    assert swapped["both"][0]["contentDiff"]["hunks"][0]["lines"] == [" one", "-deux", "+2", "+3"]
    limited = client_of(owner).get(
        f"/api/sessions/{stored.pk}/files/", {"leaf": "c4-r", "against": "c9-a", "limit": 1}
    )
    assert [f["path"] for f in limited.json()["onlyLeft"]] == ["src/a.py"]
    assert limited.json()["counts"]["onlyLeft"] == 2 and limited.json()["hasMore"] is True
    assert compare(client_of(owner), stored.pk, "c4-r", "nope").status_code == 404


def test_a_path_link_compares_only_within_its_path_and_a_frozen_link_only_what_existed(
    owner: Any, stored: Any, user: Callable[..., Any]
) -> None:
    path_link = services.create_share_link(session=stored, actor=owner, scope=ShareLink.Scope.PATH)
    frozen = services.create_share_link(session=stored, actor=owner, frozen=True)
    services.append_entries(
        session=stored,
        entries=tool_turn("c5", "c4-r", "write", {"path": "late.txt", "content": "later\n"}),
        actor=owner,
    )
    by_path = APIClient()
    by_path.credentials(HTTP_X_SHARE_TOKEN=path_link.raw_token)
    # The path (root → c4-r) compared within itself: c1-a's branch against its own leaf.
    inside = compare(by_path, stored.pk, "c1-a", "c4-r").json()
    assert [f["path"] for f in inside["onlyRight"]] == ["src/a.py", "shared.txt"]
    assert inside["onlyLeft"] == [] and inside["both"] == []
    # The other branch is not the link's: not found, either way round, and nothing of it is told.
    for leaf, against in (("c4-r", "c9-r"), ("c9-r", "c4-r")):
        refused = compare(by_path, stored.pk, leaf, against)
        assert refused.status_code == 404 and "other.txt" not in refused.content.decode()

    by_freeze = APIClient()
    by_freeze.credentials(HTTP_X_SHARE_TOKEN=frozen.raw_token)
    assert compare(by_freeze, stored.pk, "c9-r", "c4-r").status_code == 200
    assert compare(by_freeze, stored.pk, "c9-r", "c5-r").status_code == 404  # written after the freeze
    assert compare(client_of(owner), stored.pk, "c9-r", "c5-r").status_code == 200

    stranger = client_of(user("stranger"))
    assert compare(stranger, stored.pk, "c4-r", "c9-r").status_code == 404
    assert compare(APIClient(), stored.pk, "c4-r", "c9-r").status_code == 403
