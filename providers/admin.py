"""Providers in the admin: keys are write-only, compat settings shown as they apply, changes logged."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from providers import services
from providers.models import LLMProvider


class LLMProviderForm(forms.ModelForm):
    api_key = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="Write-only. Leave blank to keep the stored key.",
    )

    class Meta:
        model = LLMProvider
        fields = "__all__"

    # Left empty, these keep their defaults: no compat overrides (detect from the host), no prices.
    OPTIONAL = {"compat": dict, "cost_input": float, "cost_output": float, "cost_cache_read": float,
                "cost_cache_write": float}  # fmt: skip

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in self.OPTIONAL:
            if name in self.fields:
                self.fields[name].required = False

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        for name, empty in self.OPTIONAL.items():
            if name in cleaned and cleaned[name] in (None, ""):
                cleaned[name] = empty()
        return cleaned

    def clean_api_key(self) -> str:
        key = self.cleaned_data.get("api_key") or ""
        return key or (self.instance.api_key if self.instance.pk else "")


@admin.register(LLMProvider)
class LLMProviderAdmin(admin.ModelAdmin):
    form = LLMProviderForm
    list_display = ["name", "provider", "model_id", "api", "context_window", "is_summarizer_default", "key"]
    list_filter = ["api", "is_summarizer_default", "reasoning", "accepts_images"]
    search_fields = ["name", "provider", "model_id"]
    readonly_fields = ["key", "compat_in_force"]

    # Saves and deletes are the providers' use cases, logged; a changed key is named, never shown.
    def save_model(self, request: HttpRequest, obj: LLMProvider, form: Any, change: bool) -> None:
        services.save_provider(actor=request.user, provider=obj)

    def delete_model(self, request: HttpRequest, obj: LLMProvider) -> None:
        services.delete_provider(actor=request.user, provider=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[LLMProvider]) -> None:
        for provider in queryset:
            services.delete_provider(actor=request.user, provider=provider)

    @admin.display(description="API key")
    def key(self, obj: LLMProvider) -> str:
        return obj.masked_key or "—"

    @admin.display(description="Compat in force (OpenAI-compatible)")
    def compat_in_force(self, obj: LLMProvider) -> str:
        if not obj.pk or obj.api != LLMProvider.Api.OPENAI:
            return "—"
        c = obj.resolved_compat()
        return (
            f"maxTokensField={c.max_tokens_field}, supportsStore={c.supports_store}, "
            f"supportsDeveloperRole={c.supports_developer_role}, "
            f"supportsReasoningEffort={c.supports_reasoning_effort}, "
            f"supportsUsageInStreaming={c.supports_usage_in_streaming}, "
            f"supportsMidConvoSystemMessages={c.supports_mid_convo_system_messages}"
        )
