"""ASGI entry point: Django for HTTP, Channels consumers for websockets."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "piweb.settings")

# Set up Django before anything imports models (consumers do).
django_wsgi_app = get_wsgi_application()

from piweb.warm import warm_up  # noqa: E402

# Import every view and compile the templates now: otherwise each process's first requests do it.
warm_up()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from piweb import config  # noqa: E402
from piweb.edge import EdgeASGI  # noqa: E402
from piweb.limits import BodyLimitASGI  # noqa: E402
from piweb.routing import websocket_routes  # noqa: E402
from piweb.servers import adapt_servers  # noqa: E402
from piweb.threaded_wsgi import ThreadedWSGI  # noqa: E402
from piweb.websocket import websocket_stack  # noqa: E402

routes = websocket_routes()

# The edge answers oversized URLs and headers, slow bodies, and writes the access log (secrets redacted).
application = EdgeASGI(
    ProtocolTypeRouter(
        {
            # Oversized bodies are refused from their headers, before Django reads them.
            # Each request runs whole on one of a few threads (see piweb.threaded_wsgi for why).
            "http": BodyLimitASGI(ThreadedWSGI(django_wsgi_app, threads=config.http_threads(os.environ))),
            "websocket": websocket_stack(URLRouter(routes)),
        }
    )
)
# daphne and uvicorn import this module before they listen: teach them the same answers.
adapt_servers()
