"""Rate limits for the endpoints that spend model tokens (runs, compactions, branch summaries)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.throttling import UserRateThrottle

__all__ = ["LLMThrottle"]

DEFAULT_LLM_RATE = "30/min"


class LLMThrottle(UserRateThrottle):
    """Per user (per address when anonymous), shared by every endpoint that calls a model."""

    scope = "llm"

    def get_rate(self) -> str | None:
        # Read at request time so deployments and tests can change the rate without re-importing.
        rates: dict[str, Any] = getattr(settings, "REST_FRAMEWORK", {}).get("DEFAULT_THROTTLE_RATES", {})
        return getattr(settings, "PIWEB_LLM_RATE", None) or rates.get("llm") or DEFAULT_LLM_RATE
