#!/usr/bin/env python3
"""The rules between apps that import-linter cannot say (``make lint`` runs this beside it).

1. Another app is used only through its facade: ``from sessions_app.facade import X``. A ``models`` module may
   also import another app's ``models`` (relations), and type-only imports (under ``TYPE_CHECKING``) may
   name another app's ``models``. Libraries (``core``, ``pitree``, ``documents``) have no facade: any of
   their modules may be imported.
2. No ``apps.get_model`` of another app's model outside migrations: import it through the facade.

Migrations are exempt (they use historical models), and so are the modules listed in ``EXEMPT`` with why.
Exit status 1 and one line per violation, ``path:line: rule: what``, when any rule is broken.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# Django apps: others use them only through ``<app>/facade.py``.
APPS = (
    "providers",
    "actionlog",
    "teams",
    "sessions_app",
    "accounts_app",
    "sync",
    "live",
    "provenance",
    "compaction_app",
    "agent",
    "costs",
    "audit",
    "discussion",
    "governance",
    "runners",
    "activity",
    "organize",
    "reviews",
    "hooks",
)
# Plain Python packages at the bottom, and the configuration package at the top: no facade.
LIBRARIES = ("core", "pitree", "documents", "piweb")
# Module -> the app modules it may import past a facade, and why.
EXEMPT: dict[str, tuple[str, str]] = {
    "piweb/settings.py": ("accounts_app.oidc_config", "settings load before any app, so before any facade"),
}


@dataclass(frozen=True, slots=True)
class Violation:
    path: str
    line: int
    rule: str
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.rule}: {self.what}"


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                for inner in ast.walk(child):
                    if hasattr(inner, "lineno"):
                        lines.add(inner.lineno)
    return lines


def _imported_modules(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        if "." not in node.module:  # ``from app import x``: x may be a module of the app
            return [f"{node.module}.{alias.name}" for alias in node.names]
        return [node.module]
    return []


def check_file(path: Path, root: Path) -> Iterator[Violation]:
    relative = path.relative_to(root).as_posix()
    owner = relative.split("/", 1)[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=relative)
    typing_only = _type_checking_lines(tree)
    exempt_module, _why = EXEMPT.get(relative, ("", ""))
    for node in ast.walk(tree):
        for module in _imported_modules(node):
            app = module.split(".", 1)[0]
            if app not in APPS or app == owner or module == exempt_module:
                continue
            allowed = {f"{app}.facade"}
            if relative.endswith("/models.py") or node.lineno in typing_only:
                allowed.add(f"{app}.models")
            if not any(module == a or module.startswith(f"{a}.") for a in allowed):
                yield Violation(relative, node.lineno, "facade", f"imports {module}; use {app}.facade")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get_model"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            label = node.args[0].value.split(".", 1)[0]
            if label != owner:
                yield Violation(
                    relative, node.lineno, "get_model", f"looks up {label}'s model by name; import its facade"
                )


def check(root: Path) -> list[Violation]:
    found: list[Violation] = []
    for package in (*APPS, *LIBRARIES):
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.relative_to(root).parts:
                continue
            found.extend(check_file(path, root))
    return found


def main() -> int:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]
    found = check(root)
    for violation in found:
        print(violation)
    print(f"architecture: {len(found)} violation(s) in {', '.join(APPS)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
