"""Routes are resolved once per path, and a kept answer is the one a fresh walk gives."""

from __future__ import annotations

import pytest
from django.urls import Resolver404, get_resolver

from piweb.url_memo import MemoizedRoutes


def _memo() -> MemoizedRoutes:
    (root,) = get_resolver().url_patterns
    assert isinstance(root, MemoizedRoutes)
    return root


def test_each_session_path_keeps_its_own_arguments() -> None:
    resolver = get_resolver()
    first = resolver.resolve("/api/sessions/11/tree/")
    second = resolver.resolve("/api/sessions/12/tree/")
    again = resolver.resolve("/api/sessions/11/tree/")
    assert first.kwargs == again.kwargs == {"pk": 11}
    assert second.kwargs == {"pk": 12}
    assert first.url_name == second.url_name == "session-tree"
    assert first.namespace == "sessions_api"
    assert "/api/sessions/11/tree/"[1:] in _memo()._resolved


def test_a_path_that_matches_nothing_is_not_kept() -> None:
    with pytest.raises(Resolver404):
        get_resolver().resolve("/no/such/route/anywhere/")
    assert "no/such/route/anywhere/" not in _memo()._resolved
