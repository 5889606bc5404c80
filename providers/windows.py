"""The context window of a session's model, when the server knows that model.

Sessions synced from Pi name their model (``model_change`` entries, assistant messages) but not its
window. A configured provider for the same provider and model id knows it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from providers.models import LLMProvider

__all__ = ["available_models", "context_window_for"]


def context_window_for(model: Mapping[str, Any] | None) -> int | None:
    """Return the configured window for ``{"provider", "modelId"}``, else None."""
    if not isinstance(model, Mapping):
        return None
    provider, model_id = model.get("provider"), model.get("modelId")
    if not isinstance(model_id, str) or not model_id:
        return None
    # The same model id under the session's provider label first, then under any label: one read.
    rows = list(
        LLMProvider.objects.filter(model_id=model_id).order_by("pk").values_list("provider", "context_window")
    )
    exact = next((window for label, window in rows if label == provider), None)
    return exact or (rows[0][1] if rows else None)


def available_models() -> list[dict[str, Any]]:
    """Return the configured model providers for the composer's picker (none when runs are not offered)."""
    rows = LLMProvider.objects.order_by("-is_summarizer_default", "name").values(
        "pk", "name", "provider", "model_id", "context_window", "reasoning", "accepts_images"
    )
    return [
        {
            "id": row["pk"],
            "name": row["name"],
            "provider": row["provider"],
            "modelId": row["model_id"],
            "contextWindow": row["context_window"],
            "reasoning": row["reasoning"],
            "acceptsImages": row["accepts_images"],
        }
        for row in rows
    ]
