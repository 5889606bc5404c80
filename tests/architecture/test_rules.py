"""The rules between apps (``tools/check_architecture.py``) hold on the tree, and catch breaches."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "check_architecture", ROOT / "tools" / "check_architecture.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_the_tree_keeps_every_rule() -> None:
    found = _checker().check(ROOT)
    assert found == [], "\n".join(map(str, found))


def test_reaching_past_a_facade_is_caught(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "governance/retention.py": "from sessions_app.services.store import entry_store\n",
            "governance/views.py": "from sessions_app import access\n",
            "governance/api.py": "import teams.services\n",
            "governance/ok.py": "from sessions_app.facade import ChatSession\nfrom pitree.tree import Tree\n",
        },
    )
    found = {(v.path, v.rule) for v in _checker().check(root)}
    assert found == {
        ("governance/retention.py", "facade"),
        ("governance/views.py", "facade"),
        ("governance/api.py", "facade"),
    }


def test_models_and_type_hints_may_name_other_models(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "costs/models.py": "from sessions_app.models import ChatSession\n",
            "costs/queries.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from teams.models import Team\n"
            ),
            "costs/views.py": "from teams.models import Team\n",
        },
    )
    found = [(v.path, v.rule) for v in _checker().check(root)]
    assert found == [("costs/views.py", "facade")]


def test_looking_up_another_apps_model_by_name_is_caught(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "sessions_app/windows.py": 'apps.get_model("providers", "LLMProvider")\n',
            "sessions_app/own.py": 'apps.get_model("sessions_app", "Entry")\n',
            "sessions_app/migrations/0001_x.py": 'apps.get_model("teams", "Team")\n',
        },
    )
    found = [(v.path, v.rule) for v in _checker().check(root)]
    assert found == [("sessions_app/windows.py", "get_model")]
