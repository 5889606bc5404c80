"""Work every web process would otherwise do on its first requests, done once when it starts.

A process's first session page compiled its templates and the Markdown renderer's rules (about 100 ms on
top of the request), and under a team's first minute every new process's first pages queued behind it.
The server entry points (``asgi.py``, ``wsgi.py``) call ``warm_up`` before they serve.
"""

from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings
from django.template import TemplateDoesNotExist, TemplateSyntaxError, engines
from django.urls import get_resolver

__all__ = ["warm_up"]

logger = logging.getLogger(__name__)


def _own_templates() -> list[str]:
    """Return the names of the project's own templates (not those of the packages it uses)."""
    base = Path(settings.BASE_DIR).resolve()
    names: set[str] = set()
    for folder in engines["django"].template_dirs:  # type: ignore[attr-defined]  # the Django engine has it
        root = Path(folder).resolve()
        if root.is_relative_to(base) and ".venv" not in root.parts:
            names.update(str(p.relative_to(root)) for p in root.rglob("*.html"))
    return sorted(names)


def warm_up() -> None:
    """Import every view, compile the project's templates and the Markdown renderer."""
    get_resolver().url_patterns  # noqa: B018  # imports every view
    engine = engines["django"]
    for name in _own_templates():
        try:
            engine.get_template(name)
        except (TemplateDoesNotExist, TemplateSyntaxError):  # a partial's own error shows when used
            logger.debug("template %s not compiled at start", name, exc_info=True)
    from documents import rendering

    rendering.render_markdown("*warm* `up`\n\n```python\nwarm = True\n```\n")
