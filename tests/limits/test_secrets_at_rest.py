"""Provider API keys are encrypted in the database and plain only in memory."""

from __future__ import annotations

from typing import Any

from cryptography.fernet import Fernet
from django.db import connection
from django.test import override_settings

from providers.models import LLMProvider


def _stored(provider: LLMProvider) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT api_key FROM {LLMProvider._meta.db_table} WHERE id = %s", [provider.pk])
        return str(cursor.fetchone()[0])


def _provider(**fields: Any) -> LLMProvider:
    return LLMProvider.objects.create(
        name="p", base_url="http://127.0.0.1:9/v1", model_id="m", provider="p", **fields
    )


def test_a_provider_key_is_never_stored_in_plain_text(db: None) -> None:
    provider = _provider(api_key="sk-very-secret-1234")
    stored = _stored(provider)
    assert "sk-very-secret" not in stored and stored.startswith("fernet:")
    assert LLMProvider.objects.get(pk=provider.pk).api_key == "sk-very-secret-1234"
    assert LLMProvider.objects.get(pk=provider.pk).config().api_key == "sk-very-secret-1234"


def test_a_key_from_the_environment_can_be_rotated(db: None) -> None:
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    with override_settings(PIWEB_SECRETS_KEY=old):
        provider = _provider(api_key="sk-rotate")
    with override_settings(PIWEB_SECRETS_KEY=f"{new},{old}"):
        assert LLMProvider.objects.get(pk=provider.pk).api_key == "sk-rotate"
        provider.save()
    with override_settings(PIWEB_SECRETS_KEY=new):
        assert LLMProvider.objects.get(pk=provider.pk).api_key == "sk-rotate"


def test_a_key_stored_before_encryption_still_reads(db: None) -> None:
    provider = _provider()
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {LLMProvider._meta.db_table} SET api_key = 'sk-legacy' WHERE id = %s", [provider.pk]
        )
    assert LLMProvider.objects.get(pk=provider.pk).api_key == "sk-legacy"
