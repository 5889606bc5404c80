"""Template context every page gets from the project itself."""

from __future__ import annotations

from django.http import HttpRequest

from piweb import __version__


def release(request: HttpRequest) -> dict[str, str]:
    """The running release, for the footer: an operator reading a page knows what is deployed."""
    return {"piweb_version": __version__}
