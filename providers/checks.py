"""``manage.py check --database default`` names the providers whose stored key cannot be decrypted.

After a restore without the ``PIWEB_SECRETS_KEY`` the keys were stored under, every provider's key is
unreadable; runs and summaries through them fail. A warning, not an error: ``migrate`` runs database
checks too and must still work on such a database.
"""

from __future__ import annotations

from typing import Any

from django.core import checks


@checks.register(checks.Tags.database)
def provider_keys_decrypt(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    if not databases or "default" not in databases:
        return []
    from providers.models import LLMProvider

    sealed = [p.name for p in LLMProvider.objects.order_by("name") if p.key_sealed]
    if not sealed:
        return []
    return [
        checks.Warning(
            f"The API keys of {len(sealed)} provider(s) cannot be decrypted with PIWEB_SECRETS_KEY: "
            + ", ".join(sealed),
            hint="Set PIWEB_SECRETS_KEY to the key they were stored under (a restored database needs the "
            "key of its backup), or enter each key again in the admin.",
            id="providers.W001",
        )
    ]
