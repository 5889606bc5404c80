"""The context window of a session's model, when the server knows that model.

Sessions synced from Pi name their model (``model_change`` entries, assistant messages) but not its
window. A configured provider for the same provider and model id knows it. The provider table belongs to
the compaction app, which this app must not import: it is looked up by name, as the session page does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.apps import apps

__all__ = ["context_window_for"]


def context_window_for(model: Mapping[str, Any] | None) -> int | None:
    """Return the configured window for ``{"provider", "modelId"}``, else None."""
    if not isinstance(model, Mapping):
        return None
    provider, model_id = model.get("provider"), model.get("modelId")
    if not isinstance(model_id, str) or not model_id:
        return None
    try:
        provider_model = apps.get_model("compaction_app", "LLMProvider")
    except LookupError:
        return None
    rows = provider_model.objects.filter(model_id=model_id).order_by("pk")
    # The same model id under the session's provider label first, then under any label.
    exact = rows.filter(provider=provider).values_list("context_window", flat=True).first()
    return exact or rows.values_list("context_window", flat=True).first()
