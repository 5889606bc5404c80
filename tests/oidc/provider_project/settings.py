"""A small OpenID Connect provider (django-oidc-provider) that the sign-in tests run as a real server.

Its own SQLite database, users and RSA key; nothing is shared with piweb but the loopback network.
Its cookies have names of their own: a browser keeps cookies per host, not per port, so piweb's
``sessionid`` on the same 127.0.0.1 must not be overwritten by the provider's.
"""

from __future__ import annotations

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
SECRET_KEY = "test-provider-only-key-0123456789-not-a-secret-anywhere-else"
DEBUG = True
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "oidc_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "tests.oidc.provider_project.hooks.MisbehaveMiddleware",
]
ROOT_URLCONF = "tests.oidc.provider_project.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [HERE / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
            ]
        },
    }
]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ["PROVIDER_DB"]}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
LOGIN_URL = "/accounts/login/"
SESSION_COOKIE_NAME = "provider_session"
CSRF_COOKIE_NAME = "provider_csrftoken"
SITE_URL = os.environ["PROVIDER_SITE_URL"]
OIDC_USERINFO = "tests.oidc.provider_project.hooks.userinfo"
OIDC_IDTOKEN_PROCESSING_HOOK = "tests.oidc.provider_project.hooks.id_token_hook"
# What the tests make the provider do wrong (tamper, expired, issuer, nonce), one word in this file.
PROVIDER_MODE_FILE = os.environ["PROVIDER_MODE_FILE"]
