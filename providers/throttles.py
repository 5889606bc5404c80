"""Rate limits for the endpoints that spend model tokens (runs, compactions, branch summaries)."""

from __future__ import annotations

from django.conf import settings
from rest_framework.throttling import UserRateThrottle

__all__ = ["LLMThrottle"]


class LLMThrottle(UserRateThrottle):
    """Per user (per address when anonymous), shared by every endpoint that calls a model."""

    scope = "llm"

    def get_rate(self) -> str | None:
        # Read at request time so deployments and tests can change the rate without re-importing.
        rate: str = settings.PIWEB_LLM_RATE
        return rate
