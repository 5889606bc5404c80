"""WSGI entry point (HTTP only; websockets need the ASGI application)."""

import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "piweb.settings")

application = get_wsgi_application()
# Import every view now: otherwise each process's first request does it, a second or more of imports.
get_resolver().url_patterns  # noqa: B018
