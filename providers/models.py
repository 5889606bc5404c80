"""The models piweb can call: one row per model at one provider, its key encrypted at rest.

The table kept the name it had when providers lived in ``compaction_app``, so no data moved.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from core.secret_box import EncryptedTextField, SealedSecret
from providers.llm import ProviderConfig
from providers.llm.compat import OpenAICompat, resolve_compat, validate_compat


def _validate_compat(value: Any) -> None:
    try:
        validate_compat(value)
    except ValueError as exc:
        raise ValidationError(str(exc)) from exc


class LLMProvider(models.Model):
    """One model at one provider that can write summaries. The key is write-only everywhere."""

    class Api(models.TextChoices):
        OPENAI = "openai-completions", "OpenAI-compatible chat completions"
        ANTHROPIC = "anthropic-messages", "Anthropic messages"

    name = models.CharField(max_length=100, unique=True)
    api = models.CharField(max_length=32, choices=Api.choices, default=Api.OPENAI)
    base_url = models.CharField(
        max_length=500, help_text="OpenAI-compatible URLs include /v1; Anthropic's do not"
    )
    model_id = models.CharField(max_length=200)
    provider = models.CharField(max_length=100, help_text="Provider label recorded in summaries, e.g. openai")
    context_window = models.PositiveIntegerField(default=128000)
    max_output_tokens = models.PositiveIntegerField(default=4096)
    api_key = EncryptedTextField(blank=True, default="", help_text="Encrypted at rest (PIWEB_SECRETS_KEY)")
    is_summarizer_default = models.BooleanField(default=False)
    reasoning = models.BooleanField(default=False)
    accepts_images = models.BooleanField(
        default=True,
        db_default=True,
        help_text=(
            'The model takes pictures (Pi\'s input "image"). Off for a text-only model: each picture in '
            "the conversation is sent as a note that it was omitted, as Pi sends it."
        ),
    )
    compat = models.JSONField(
        default=dict,
        blank=True,
        validators=[_validate_compat],
        help_text=(
            "OpenAI-compatible servers only: Pi's compat settings, "
            'e.g. {"maxTokensField": "max_tokens"}. Settings left out are detected from the provider '
            "and the base URL, as Pi detects them."
        ),
    )
    cost_input = models.FloatField(default=0, help_text="Dollars per million input tokens")
    cost_output = models.FloatField(default=0, help_text="Dollars per million output tokens")
    cost_cache_read = models.FloatField(default=0, help_text="Dollars per million cache-read tokens")
    cost_cache_write = models.FloatField(default=0, help_text="Dollars per million cache-write tokens")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "compaction_app_llmprovider"
        verbose_name = "LLM provider"
        constraints = [
            models.UniqueConstraint(
                fields=["is_summarizer_default"],
                condition=Q(is_summarizer_default=True),
                name="one_default_summarizer",
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.provider}/{self.model_id})"

    @property
    def key_sealed(self) -> bool:
        """Whether the stored key cannot be decrypted with the configured ``PIWEB_SECRETS_KEY``."""
        return isinstance(self.api_key, SealedSecret)

    @property
    def masked_key(self) -> str:
        """Return the key with all but its last four characters hidden."""
        if self.key_sealed:
            return "cannot be decrypted (PIWEB_SECRETS_KEY changed): enter the key again"
        if not self.api_key:
            return ""
        return "•" * 8 + self.api_key[-4:] if len(self.api_key) > 8 else "•" * 8

    def config(self) -> ProviderConfig:
        """Return the client configuration for this model."""
        if self.key_sealed:
            # Sending the stored ciphertext as a key would fail at the provider with a puzzling 401.
            raise ValueError(
                f"The API key of provider {self.name!r} cannot be decrypted: PIWEB_SECRETS_KEY is not the "
                "key it was stored under. Restore that key, or enter the API key again in the admin."
            )
        return ProviderConfig(
            api=self.api,  # type: ignore[arg-type]
            provider=self.provider,
            base_url=self.base_url,
            model_id=self.model_id,
            api_key=self.api_key,
            context_window=self.context_window,
            max_output_tokens=self.max_output_tokens,
            reasoning=self.reasoning,
            accepts_images=self.accepts_images,
            compat=dict(self.compat or {}),
            cost={
                "input": self.cost_input,
                "output": self.cost_output,
                "cacheRead": self.cost_cache_read,
                "cacheWrite": self.cost_cache_write,
            },
        )

    def resolved_compat(self) -> OpenAICompat:
        """The compat settings in force: the configured ones over those detected from the host."""
        return resolve_compat(self.provider, self.base_url, self.compat)
