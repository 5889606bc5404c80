"""What an OpenAI-compatible server accepts, configured per provider or detected from its host.

A provider record may carry a ``compat`` object with Pi's own setting names (as in Pi's ``models.json``);
each setting it leaves out is detected from the provider label and the base URL the way Pi detects it, so
the same provider gets the same request from Pi and from piweb. Only settings this client acts on are
known; any other key is refused when the record is saved.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["COMPAT_SETTINGS", "OpenAICompat", "detect_compat", "resolve_compat", "validate_compat"]

MaxTokensField = Literal["max_completion_tokens", "max_tokens"]

# Setting name -> allowed values (None: a boolean).
COMPAT_SETTINGS: dict[str, tuple[str, ...] | None] = {
    "supportsStore": None,
    "supportsDeveloperRole": None,
    "supportsReasoningEffort": None,
    "supportsUsageInStreaming": None,
    "maxTokensField": ("max_completion_tokens", "max_tokens"),
    "supportsMidConvoSystemMessages": None,
    "requiresNonNullAssistantContent": None,
}


@dataclass(frozen=True, slots=True)
class OpenAICompat:
    supports_store: bool  # sends ``store: false`` so the server keeps no copy of the conversation
    supports_developer_role: bool  # a reasoning model's prompt goes out as the ``developer`` role
    supports_reasoning_effort: bool  # a thinking level goes out as ``reasoning_effort``
    supports_usage_in_streaming: bool  # asks for a usage chunk with ``stream_options``
    max_tokens_field: MaxTokensField
    supports_mid_convo_system_messages: bool  # later system messages stay in place as updates
    requires_non_null_assistant_content: bool  # an assistant turn with only tool calls sends "" not null


def _host_flags(provider: str, base_url: str) -> dict[str, bool]:
    url = base_url
    zai = provider in ("zai", "zai-coding-cn") or "api.z.ai" in url or "open.bigmodel.cn" in url
    together = provider == "together" or "api.together.ai" in url or "api.together.xyz" in url
    moonshot = provider in ("moonshotai", "moonshotai-cn") or "api.moonshot." in url
    cf_workers = provider == "cloudflare-workers-ai" or "api.cloudflare.com" in url
    cf_gateway = provider == "cloudflare-ai-gateway" or "gateway.ai.cloudflare.com" in url
    nvidia = provider == "nvidia" or "integrate.api.nvidia.com" in url
    ant_ling = provider == "ant-ling" or "api.ant-ling.com" in url
    cerebras = provider == "cerebras" or "cerebras.ai" in url
    deepseek = provider == "deepseek" or "deepseek.com" in url.lower()
    grok = provider == "xai" or "api.x.ai" in url
    chutes = "chutes.ai" in url
    opencode = provider == "opencode" or "opencode.ai" in url
    return {
        "non_standard": nvidia
        or cerebras
        or grok
        or together
        or chutes
        or deepseek
        or zai
        or moonshot
        or opencode
        or cf_workers
        or cf_gateway
        or ant_ling,
        "max_tokens": chutes or deepseek or moonshot or cf_gateway or together or nvidia or ant_ling or zai,
        "no_effort": grok or zai or moonshot or together or cf_gateway or nvidia or ant_ling,
        "openai": provider == "openai" or "api.openai.com" in url,
    }


def detect_compat(provider: str, base_url: str) -> OpenAICompat:
    """The settings Pi assumes for a provider it has no ``compat`` for."""
    flags = _host_flags(provider, base_url)
    return OpenAICompat(
        supports_store=not flags["non_standard"],
        supports_developer_role=flags["openai"],
        supports_reasoning_effort=not flags["no_effort"],
        supports_usage_in_streaming=True,
        max_tokens_field="max_tokens" if flags["max_tokens"] else "max_completion_tokens",
        supports_mid_convo_system_messages=False,
        requires_non_null_assistant_content=False,
    )


def resolve_compat(provider: str, base_url: str, overrides: Mapping[str, Any] | None) -> OpenAICompat:
    """Detected settings with the configured ones on top."""
    detected = detect_compat(provider, base_url)
    given = dict(overrides or {})

    def pick(name: str, default: Any) -> Any:
        value = given.get(name)
        return default if value is None else value

    return OpenAICompat(
        supports_store=bool(pick("supportsStore", detected.supports_store)),
        supports_developer_role=bool(pick("supportsDeveloperRole", detected.supports_developer_role)),
        supports_reasoning_effort=bool(pick("supportsReasoningEffort", detected.supports_reasoning_effort)),
        supports_usage_in_streaming=bool(
            pick("supportsUsageInStreaming", detected.supports_usage_in_streaming)
        ),
        max_tokens_field=pick("maxTokensField", detected.max_tokens_field),
        supports_mid_convo_system_messages=bool(
            pick("supportsMidConvoSystemMessages", detected.supports_mid_convo_system_messages)
        ),
        requires_non_null_assistant_content=bool(
            pick("requiresNonNullAssistantContent", detected.requires_non_null_assistant_content)
        ),
    )


def validate_compat(value: Any) -> dict[str, Any]:
    """Return the settings as given, or raise ValueError naming the first bad one."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError("compat must be a JSON object of settings")
    for name, setting in value.items():
        if name not in COMPAT_SETTINGS:
            known = ", ".join(COMPAT_SETTINGS)
            raise ValueError(f"Unknown compat setting {name!r}; known settings: {known}")
        allowed = COMPAT_SETTINGS[name]
        if setting is None:
            continue
        if allowed is None and not isinstance(setting, bool):
            raise ValueError(f"compat setting {name!r} must be true or false")
        if allowed is not None and setting not in allowed:
            raise ValueError(f"compat setting {name!r} must be one of: {', '.join(allowed)}")
    return dict(value)
