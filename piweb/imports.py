"""Import modules that other parts of the project add later, without hiding their own import errors."""

from __future__ import annotations

import importlib
from types import ModuleType


def import_optional(name: str) -> ModuleType | None:
    """Import `name`, or return None if that module (or a package on its path) does not exist."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        # Only a missing `name` itself means "not there yet"; a missing import inside it is a real error.
        if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
            return None
        raise
