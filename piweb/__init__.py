"""piweb project package; loads Celery so shared tasks bind to this app."""

from piweb.celery import app as celery_app

__all__ = ("celery_app",)
