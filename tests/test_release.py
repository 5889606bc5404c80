"""One release everywhere it is shown: ``/readyz``, the page footer, the changelog's top entry, and the
package metadata pyproject.toml builds (an operator reads the first two to know what is deployed)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from django.test import Client

import piweb

REPO = Path(__file__).resolve().parent.parent
FOOTER = re.compile(r'<footer class="site-footer">piweb <span id="piweb-version">([^<]+)</span>')


def changelog_top_entry() -> str:
    match = re.search(r"^## (\S+)", (REPO / "CHANGELOG.md").read_text(), flags=re.MULTILINE)
    assert match is not None, "CHANGELOG.md has no release entry"
    return match.group(1)


@pytest.mark.django_db
def test_readyz_footer_and_changelog_name_the_same_release(client: Client) -> None:
    ready = client.get("/readyz")
    page = client.get("/accounts/login/")
    assert page.status_code == 200

    footer = FOOTER.search(page.text)
    assert footer is not None, "the sign-in page has no release in its footer"
    assert ready.json()["version"] == footer.group(1) == changelog_top_entry() == piweb.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", piweb.__version__)


def test_the_package_version_is_read_from_the_one_place() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "piweb.__version__"}


def test_every_release_entry_says_how_to_upgrade() -> None:
    text = (REPO / "CHANGELOG.md").read_text()
    entries = re.split(r"^## ", text, flags=re.MULTILINE)[1:]
    assert len(entries) >= 2
    # The oldest entry kept may predate upgrade notes; every later one says what to run and back up.
    for entry in entries[:-1] if len(entries) > 2 else entries:
        name = entry.split("\n", 1)[0]
        assert "### Upgrade" in entry, f"{name} has no upgrade notes"
        assert "migrate" in entry and "Back up" in entry, f"{name} does not say what to run and back up"


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_the_image_lock_pins_every_runtime_dependency() -> None:
    """The image installs at requirements.lock's versions: a dependency added without ``make lock`` would
    go in at whatever version PyPI has that day, untested."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    lines = (REPO / "requirements.lock").read_text().splitlines()
    pinned = {_name(line) for line in lines if line and not line.startswith("#")}
    assert all("==" in line for line in lines if line and not line.startswith("#"))
    missing = sorted({_name(dep) for dep in project["project"]["dependencies"]} - pinned)
    assert not missing, f"requirements.lock does not pin {missing}: run make lock"
