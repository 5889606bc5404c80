"""``{% module_script "app/main.js" %}``: a page's ES module with every module it imports preloaded.

Without preloads the browser learns a module's imports only once that module has arrived, so a page's
scripts arrive in as many round trips as its import graph is deep (five on the session page, about
350 ms before its first API request). A ``modulepreload`` link per module lets all of them load at once.
"""

from __future__ import annotations

import posixpath
import re
from functools import lru_cache
from typing import Any

from django import template
from django.conf import settings
from django.contrib.staticfiles import finders
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.templatetags.static import static
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

register = template.Library()

# Static imports and re-exports with a relative specifier; dynamic import() loads on demand, not here.
_IMPORT = re.compile(r"""^\s*(?:import|export)\b[^'";]*?(?:\bfrom\s*)?["'](\.{1,2}/[^"']+)["']""", re.M)


def imports_of(path: str) -> list[str]:
    """Return the static paths ``path`` imports directly (relative specifiers resolved)."""
    found = finders.find(path)
    if not found:
        return []
    with open(found, encoding="utf-8") as fh:
        source = fh.read()
    folder = posixpath.dirname(path)
    return [posixpath.normpath(posixpath.join(folder, spec)) for spec in _IMPORT.findall(source)]


def module_graph(entry: str) -> list[str]:
    """Return every module ``entry`` imports, directly or not, in the order they are first reached."""
    seen: dict[str, None] = {}
    stack = [entry]
    while stack:
        path = stack.pop()
        for child in imports_of(path):
            if child != entry and child not in seen:
                seen[child] = None
                stack.append(child)
    return list(seen)


def _tags(entry: str) -> SafeString:
    preloads = format_html_join(
        "", '<link rel="modulepreload" href="{}">\n', ((static(p),) for p in module_graph(entry))
    )
    return format_html('{}<script type="module" src="{}"></script>', preloads, static(entry))


_cached_tags = lru_cache(maxsize=64)(_tags)


@receiver(setting_changed)
def _forget(setting: str, **_: Any) -> None:
    # Tests swap the storage (hashed names) and the static URL; a deployment never does.
    if setting in ("STORAGES", "STATIC_URL", "STATIC_ROOT", "STATICFILES_DIRS"):
        _cached_tags.cache_clear()


@register.simple_tag
def module_script(entry: str) -> SafeString:
    """Return preload links for ``entry``'s imports and the module script itself."""
    # Development edits modules between requests; a deployment's files are fixed until it restarts.
    return _tags(entry) if settings.DEBUG else _cached_tags(entry)
