"""The project's settings with one extra route, ``/minimal/``: the REST benchmark's baseline view."""

from piweb.settings import *  # noqa: F403

ROOT_URLCONF = "bench.minimal_urls"
