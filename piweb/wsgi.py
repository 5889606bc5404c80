"""WSGI entry point (HTTP only; websockets need the ASGI application)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "piweb.settings")

application = get_wsgi_application()

from piweb.warm import warm_up  # noqa: E402

# Import every view and compile the templates now: otherwise each process's first requests do it.
warm_up()
