"""The browser modules after ``collectstatic`` with the production storage: every relative import of a
hashed module names a hashed file that exists, so a deploy never mixes old and new modules."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import override_settings

IMPORT = re.compile(r"""(?:import|export)\s*(?:[\s{][^;]*?|\*\s*as\s*\w+)\s*from\s*["']([./][^"']*)["']""")
HASHED = re.compile(r"\.[0-9a-f]{12}\.js$")


@pytest.fixture
def collected(tmp_path: Path) -> Path:
    storages = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "piweb.static_storage.ModuleManifestStaticFilesStorage"},
    }
    with override_settings(STATIC_ROOT=tmp_path, STORAGES=storages, DEBUG=False):
        call_command("collectstatic", interactive=False, verbosity=0)
    return tmp_path / "sessions_app"


def test_hashed_modules_import_hashed_modules_that_exist(collected: Path) -> None:
    hashed = [p for p in collected.rglob("*.js") if HASHED.search(p.name)]
    entry = [p for p in hashed if p.parent.name == "session" and p.name.startswith("main.")]
    assert entry, "the session page's entry module was not collected under a hashed name"
    imports = 0
    for module in hashed:
        for target in IMPORT.findall(module.read_text()):
            imports += 1
            assert HASHED.search(target), f"{module.name} imports the unhashed {target}"
            assert (module.parent / target).resolve().is_file(), f"{module.name} imports missing {target}"
    assert imports > 20  # every panel module imports the shared ones


def test_no_module_hangs_names_on_window(collected: Path) -> None:
    # A module never hangs names on window: nothing assigns window.Pi any more.
    for module in collected.rglob("*.js"):
        assert "window.Pi" not in module.read_text(), module.name


PRELOAD = re.compile(r'<link rel="modulepreload" href="([^"]+)">')


def _walk(entry: Path) -> set[Path]:
    seen: set[Path] = set()
    stack = [entry.resolve()]
    while stack:
        module = stack.pop()
        for target in IMPORT.findall(module.read_text()):
            child = (module.parent / target).resolve()
            if child != entry.resolve() and child not in seen:
                seen.add(child)
                stack.append(child)
    return seen


@pytest.mark.django_db
def test_the_session_page_preloads_every_module_it_imports(client: Any, django_user_model: Any) -> None:
    # Without preloads the browser finds a module's imports only when it arrives: one round trip per level
    # of the import graph before the page's first request for data.
    from sessions_app import services
    from tests.factories import session_file, small_tree

    owner = django_user_model.objects.create_user("preloader")
    session = services.import_jsonl(actor=owner, data=session_file(small_tree())).session
    client.force_login(owner)
    html = client.get(f"/sessions/{session.pk}/").content.decode()
    static = Path(__file__).resolve().parents[2] / "static"
    expected = {p.relative_to(static).as_posix() for p in _walk(static / "sessions_app/session/main.js")}
    preloaded = {href.removeprefix("/static/") for href in PRELOAD.findall(html)}
    assert "sessions_app/tree_layout.js" in expected  # three imports deep
    assert expected <= preloaded
    assert html.index("modulepreload") < html.index('src="/static/sessions_app/session/main.js"')


def test_preloads_name_the_hashed_files_in_production(collected: Path) -> None:
    from django.template import Context, Template

    storages = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "piweb.static_storage.ModuleManifestStaticFilesStorage"},
    }
    with override_settings(STATIC_ROOT=collected.parent, STORAGES=storages, DEBUG=False):
        html = Template("{% load modules %}{% module_script 'sessions_app/session/main.js' %}").render(
            Context()
        )
    hrefs = PRELOAD.findall(html)
    assert len(hrefs) > 20
    for href in hrefs:
        assert HASHED.search(href), href
        assert (collected.parent / href.removeprefix("/static/")).is_file(), href
