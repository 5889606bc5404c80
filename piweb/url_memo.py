"""Routes resolved once per path and process.

Django walks the URL patterns in order on every request: with every app's routes that was about a fifth
of a millisecond for a session's API read, more than its serialization. The routes never change while
the process runs, so a path resolves to the same view and arguments every time: the first answer is
kept (up to ``MAX_PATHS`` paths, then the memory starts afresh). A path that matches nothing is not
kept, so probing random paths cannot fill it.
"""

from __future__ import annotations

from typing import Any

from django.urls import URLResolver
from django.urls.resolvers import ResolverMatch, RoutePattern

__all__ = ["MAX_PATHS", "MemoizedRoutes"]

MAX_PATHS = 4096


class MemoizedRoutes(URLResolver):
    """An include at the root (prefix "") that keeps what each path resolved to."""

    def __init__(self, patterns: list[Any]) -> None:
        super().__init__(RoutePattern("", is_endpoint=False), patterns)
        self._resolved: dict[str, ResolverMatch] = {}

    def resolve(self, path: str) -> ResolverMatch:
        known = self._resolved.get(path)
        if known is not None:
            return known
        match = super().resolve(path)
        # What was tried before the match only serves the debug 404 page, and copying it on every
        # request costs as much as the walk saved.
        match.tried = None
        if len(self._resolved) >= MAX_PATHS:
            self._resolved = {}
        self._resolved[path] = match
        return match
