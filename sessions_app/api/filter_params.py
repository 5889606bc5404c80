"""The session list's structured filters as OpenAPI parameters, for the REST list and the search.

The filters themselves are registered by the apps owning their data (``list_filters``); this names the
ones every installation has, for the schema. A parameter may repeat or hold values split by commas.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter

_FILTERS: list[tuple[str, object, str]] = [
    ("team", OpenApiTypes.STR, "Shared with this team (by name; one of yours). Repeated: all of them"),
    ("owner", OpenApiTypes.STR, "Owned by this username, or `me`. Repeated: any of them"),
    ("author", OpenApiTypes.STR, "Has entries written by this username, or `me`. Repeated: all of them"),
    ("model", OpenApiTypes.STR, "Used this model (`provider/model` or the model's name), any branch"),
    ("provider", OpenApiTypes.STR, "Used a model of this provider, any branch"),
    ("cost_min", OpenApiTypes.DECIMAL, "Cost at least this many dollars, all branches"),
    ("cost_max", OpenApiTypes.DECIMAL, "Cost at most this many dollars, all branches"),
    ("tool", OpenApiTypes.STR, "Used this tool (e.g. `bash`, `edit`). Repeated: all of them"),
    ("label", OpenApiTypes.STR, "Has an entry labelled with this text (any case). Repeated: all of them"),
    ("created_after", OpenApiTypes.DATE, "Created on or after this UTC day (YYYY-MM-DD)"),
    ("created_before", OpenApiTypes.DATE, "Created on or before this UTC day (YYYY-MM-DD)"),
    ("updated_after", OpenApiTypes.DATE, "Last active on or after this UTC day (YYYY-MM-DD)"),
    ("updated_before", OpenApiTypes.DATE, "Last active on or before this UTC day (YYYY-MM-DD)"),
    (
        "state",
        OpenApiTypes.STR,
        "running, failed (failed runs), compacted, open-threads (unresolved comments), secrets "
        "(flagged, not redacted). Repeated: sessions in all of them",
    ),
]

# A filter bar's form sends its empty fields as ``name=``: an empty value is no filter, so a field with
# a format (a date, an amount) also admits the empty string.
_FORMATTED: dict[object, dict[str, str]] = {
    OpenApiTypes.DATE: {"type": "string", "format": "date"},
    OpenApiTypes.DECIMAL: {"type": "number"},
}


def _schema(kind: object) -> object:
    if kind in _FORMATTED:
        return {"oneOf": [_FORMATTED[kind], {"type": "string", "maxLength": 0}]}
    return kind


FILTER_PARAMETERS = [
    OpenApiParameter(name, _schema(kind), OpenApiParameter.QUERY, required=False, description=text)  # type: ignore[arg-type]
    for name, kind, text in _FILTERS
]
"""An unknown or malformed value answers 400 with the reason under ``filters``."""
