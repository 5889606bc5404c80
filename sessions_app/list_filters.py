"""Structured filters of the session list and search, each one URL parameter.

The app that owns what a filter looks at registers it (tags and archive in their app, review status in
reviews, cost in costs), in its ``AppConfig.ready()``; ``sessions_app`` never imports them. A filter
narrows a queryset of sessions the viewer may already read, so it can never widen what anyone sees.
Every filter answers from an index kept at write time: a filter that needs a scan is a bug.

A parameter may repeat (``?tag=a&tag=b``); a filter takes all its values at once and decides how they
combine (tags: all of them; states: any of them is documented per filter). A filter that is absent may
still narrow by default (archived sessions are hidden unless ``archived`` asks for them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from sessions_app.models import ChatSession

__all__ = [
    "FilterError",
    "SessionFilter",
    "SessionState",
    "active_filters",
    "apply_filters",
    "leading_order",
    "read_search_text",
    "register_leading_order",
    "register_search_reader",
    "register_session_filter",
    "register_state",
    "registered_filters",
    "registered_states",
]


MAX_VALUES = 20  # per parameter: more than this is not a filter a person wrote
MAX_VALUE_LENGTH = 200


class FilterError(ValueError):
    """A filter value that cannot be understood; the message says which and why (answered as 400)."""


# (sessions, values, viewer) -> narrowed sessions. ``values`` are stripped, non-empty, de-duplicated.
Apply = Callable[["QuerySet[ChatSession]", list[str], Any], "QuerySet[ChatSession]"]
# (viewer) -> [(value, label)] offered in the filter bar; only values the viewer may know of.
Choices = Callable[[Any], list[tuple[str, str]]]


@dataclass(frozen=True)
class SessionFilter:
    name: str  # the URL parameter
    label: str  # how the filter bar names it
    apply: Apply
    # Applied when the parameter is absent (None: no narrowing).
    default: Callable[[QuerySet[ChatSession], Any], QuerySet[ChatSession]] | None = None
    choices: Choices | None = None
    # "text" (free value), "choice" (one of ``choices``), "date" (YYYY-MM-DD), "number".
    kind: str = "text"
    order: int = 100  # position in the filter bar
    help: str = field(default="", compare=False)


_REGISTRY: dict[str, SessionFilter] = {}
# (search text) -> (the text left, {filter name: values}): what of a search box's text a filter reads
# (a ``commit:`` term, a pasted commit SHA or pull-request URL), so typing it works as the parameter does.
SearchReader = Callable[[str], tuple[str, dict[str, list[str]]]]
_READERS: dict[str, SearchReader] = {}
# Parameters the list reads itself, which no filter may take.
RESERVED = frozenset({"q", "page", "page_size", "sort", "scope", "format", "cursor", "limit", "offset"})


def register_session_filter(spec: SessionFilter) -> SessionFilter:
    """Add a filter; registering the same spec again is a no-op, another spec under its name fails."""
    if spec.name in RESERVED:
        raise ValueError(f"{spec.name!r} is read by the session list itself and cannot be a filter")
    known = _REGISTRY.get(spec.name)
    if known is not None and known != spec:
        raise ValueError(f"a session filter named {spec.name!r} is registered already")
    _REGISTRY[spec.name] = spec
    return spec


# (viewer) -> an ordering expression the list's default sort puts first (pinned sessions on top).
Lead = Callable[[Any], Any]
_LEADS: dict[str, Lead] = {}


def register_leading_order(name: str, lead: Lead) -> None:
    _LEADS[name] = lead


def leading_order(viewer: Any) -> list[Any]:
    """What the default sort orders by before its own keys, in name order."""
    return [_LEADS[name](viewer) for name in sorted(_LEADS)]


def registered_filters() -> list[SessionFilter]:
    """Every filter, in filter-bar order."""
    return sorted(_REGISTRY.values(), key=lambda f: (f.order, f.name))


def _values_of(params: Mapping[str, Any], name: str) -> list[str]:
    getlist = getattr(params, "getlist", None)
    raw: Sequence[Any] = getlist(name) if getlist is not None else _as_list(params.get(name))
    values: list[str] = []
    for item in raw:
        for part in str(item).split(",") if name not in _NO_SPLIT else [str(item)]:
            value = part.strip()
            if not value:
                continue
            if len(value) > MAX_VALUE_LENGTH:
                raise FilterError(f"{name}: a value is longer than {MAX_VALUE_LENGTH} characters")
            if value not in values:
                values.append(value)
    if len(values) > MAX_VALUES:
        raise FilterError(f"{name}: at most {MAX_VALUES} values")
    return values


# Parameters whose values may hold commas themselves.
_NO_SPLIT: set[str] = set()


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def active_filters(params: Mapping[str, Any]) -> dict[str, list[str]]:
    """The registered filters present in ``params`` with their values (FilterError for a bad one)."""
    return {f.name: values for f in registered_filters() if (values := _values_of(params, f.name))}


def apply_filters[QS](query: QS, params: Mapping[str, Any], viewer: Any) -> QS:
    """Narrow ``query`` by every registered filter present in ``params``, and by the defaults of the rest."""
    active = active_filters(params)
    narrowed: Any = query
    for spec in registered_filters():
        values = active.get(spec.name)
        if values:
            narrowed = spec.apply(narrowed, values, viewer)
        elif spec.default is not None:
            narrowed = spec.default(narrowed, viewer)
    return cast("QS", narrowed)


def register_search_reader(name: str, reader: SearchReader) -> None:
    """Let a filter take its values from the search text too (its app calls this when ready)."""
    _READERS[name] = reader


def read_search_text(text: str, params: Mapping[str, Any]) -> tuple[str, dict[str, list[str]]]:
    """Return the search text left once every reader took its terms, and ``params``' filter values with
    the ones read from the text added."""
    named: dict[str, list[str]] = {}
    for name in sorted(_READERS):
        text, found = _READERS[name](text)
        for key, values in found.items():
            named.setdefault(key, []).extend(values)
    if not named:
        return text, dict(active_filters(params))
    merged = dict(active_filters(params))
    for key, values in named.items():
        merged[key] = [*merged.get(key, []), *(v for v in values if v not in merged.get(key, []))]
    return text.strip(), merged


# ``state``: one parameter whose values different apps own (running in agent, secrets in governance...).
# Several states combine as "all of them": a session listed under ``state=failed&state=open-threads`` has
# both, so adding a state only ever narrows the list, like every other filter.
StateApply = Callable[["QuerySet[ChatSession]", Any], "QuerySet[ChatSession]"]


@dataclass(frozen=True)
class SessionState:
    value: str
    label: str
    apply: StateApply
    order: int = 100


_STATES: dict[str, SessionState] = {}


def register_state(value: str, label: str, apply: StateApply, *, order: int = 100) -> SessionState:
    """Add a value of the ``state`` filter; the same value twice from another place fails."""
    spec = SessionState(value, label, apply, order)
    known = _STATES.get(value)
    if known is not None and known != spec:
        raise ValueError(f"a session state named {value!r} is registered already")
    _STATES[value] = spec
    return spec


def registered_states() -> list[SessionState]:
    return sorted(_STATES.values(), key=lambda s: (s.order, s.value))


def apply_states(query: QuerySet[ChatSession], values: list[str], viewer: Any) -> QuerySet[ChatSession]:
    unknown = [v for v in values if v not in _STATES]
    if unknown:
        known = ", ".join(s.value for s in registered_states())
        raise FilterError(f"state: unknown value {unknown[0]!r} (one of: {known})")
    for value in values:
        query = _STATES[value].apply(query, viewer)
    return query


def state_choices(viewer: Any) -> list[tuple[str, str]]:
    return [(s.value, s.label) for s in registered_states()]
