"""``manage.py check --database default`` names the providers whose stored key cannot be decrypted.

After a restore without the ``PIWEB_SECRETS_KEY`` the keys were stored under, every provider's key is
unreadable; runs and summaries through them fail. A warning, not an error: ``migrate`` runs database
checks too and must still work on such a database.
"""

from __future__ import annotations

from typing import Any

from django.core import checks
from django.db import DatabaseError


@checks.register(checks.Tags.database)
def provider_keys_decrypt(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    if not databases or "default" not in databases:
        return []
    from core.secret_box import SealedSecret
    from providers.models import LLMProvider

    try:
        # Two columns only: migrate runs this check before it adds the newer ones (or the table).
        rows = list(LLMProvider.objects.order_by("name").values_list("name", "api_key"))
    except DatabaseError:
        return []
    sealed = [name for name, key in rows if isinstance(key, SealedSecret)]
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
