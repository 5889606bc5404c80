"""The browser modules after ``collectstatic`` with the production storage: every relative import of a
hashed module names a hashed file that exists, so a deploy never mixes old and new modules."""

from __future__ import annotations

import re
from pathlib import Path

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
