"""Secrets at rest (provider API keys): encrypted with Fernet under a key from the environment.

``PIWEB_SECRETS_KEY`` holds one or more Fernet keys, comma-separated: the first encrypts, all decrypt,
so a key can be rotated by putting the new one first. Without it, a key is derived from ``SECRET_KEY``
(fine for development; ``check --deploy`` warns in production).
"""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core import checks
from django.db import models

__all__ = ["EncryptedTextField", "SealedSecret", "decrypt", "encrypt"]

# Stored values carry a marker, so a plain value written before encryption is still read correctly.
PREFIX = "fernet:"


@cache
def _box(keys: str, secret_key: str) -> MultiFernet:
    if keys.strip():
        return MultiFernet([Fernet(k.strip().encode()) for k in keys.split(",") if k.strip()])
    derived = base64.urlsafe_b64encode(hashlib.sha256(b"piweb-secrets:" + secret_key.encode()).digest())
    return MultiFernet([Fernet(derived)])


def _current() -> MultiFernet:
    return _box(settings.PIWEB_SECRETS_KEY, settings.SECRET_KEY)


def encrypt(plain: str) -> str:
    """Return the stored form of ``plain`` (empty stays empty)."""
    if not plain:
        return ""
    return PREFIX + _current().encrypt(plain.encode("utf-8")).decode("ascii")


def decrypt(stored: str) -> str:
    """Return the plain value of a stored one; a value written before encryption is returned as is."""
    if not stored or not stored.startswith(PREFIX):
        return stored
    try:
        return _current().decrypt(stored[len(PREFIX) :].encode("ascii")).decode("utf-8")
    except InvalidToken as exc:
        raise ValueError("a stored secret cannot be decrypted: PIWEB_SECRETS_KEY has changed") from exc


class SealedSecret(str):
    """A stored secret the configured keys cannot decrypt (a database restored without its
    ``PIWEB_SECRETS_KEY``): the stored text, kept as it is, so saving its row does not lose it. Loading
    the row works (lists and the admin show it as undecryptable); using the secret is refused by its
    owner with a clear error."""

    __slots__ = ()


class EncryptedTextField(models.TextField):
    """A text column whose value is encrypted in the database and plain in Python."""

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        if not isinstance(value, str):
            return value
        try:
            return decrypt(value)
        except ValueError:
            return SealedSecret(value)

    def get_prep_value(self, value: Any) -> Any:
        value = super().get_prep_value(value)
        return encrypt(value) if isinstance(value, str) and not value.startswith(PREFIX) else value


@checks.register(checks.Tags.security, deploy=True)
def secrets_key_is_set(**kwargs: Any) -> list[checks.CheckMessage]:
    if settings.PIWEB_SECRETS_KEY.strip():
        return []
    return [
        checks.Warning(
            "PIWEB_SECRETS_KEY is not set: provider keys are encrypted with a key derived from SECRET_KEY.",
            hint="Set PIWEB_SECRETS_KEY to a Fernet key (cryptography.fernet.Fernet.generate_key()).",
            id="piweb.W001",
        )
    ]
