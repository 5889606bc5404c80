"""piweb project package; loads Celery so shared tasks bind to this app.

``__version__`` is the release, in one place: pyproject.toml reads it (statically, without importing
the package), ``/readyz`` answers it and every page's footer shows it; ``CHANGELOG.md``'s top entry
names it (tests/test_release.py holds the three equal).
"""

from piweb.celery import app as celery_app

__version__ = "0.5.2"

__all__ = ("__version__", "celery_app")
