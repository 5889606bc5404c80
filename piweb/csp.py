"""The Content-Security-Policy header on every answer: only piweb's own files may run, style or connect.

Session content is untrusted (a transcript can hold any markup), so the policy is the second wall behind
escaping: no inline script, no inline style attribute, no plugin, no ``<base>``, no framing, and fetches and
sockets only to this origin. Pages pass their configuration as ``json_script`` data, which the policy does
not govern; browser code sets styles through the CSSOM (``el.style``), which it allows.

Exceptions, each narrower than dropping the header:

- an answer that sets its own policy keeps it (the standalone HTML export forbids even more);
- the sign-in page's form goes on to the identity provider, so ``form-action`` names its origin
  (settings read it once: ``OIDC_SIGN_IN``);
- a view may loosen one directive with ``loosened`` (the API documentation pages: Swagger UI and Redoc
  style with ``<style>`` elements and run a worker from a ``blob:``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponseBase

__all__ = ["HEADER", "ContentSecurityPolicyMiddleware", "loosened", "policy_for"]

HEADER = "Content-Security-Policy"

BASE: dict[str, tuple[str, ...]] = {
    "default-src": ("'self'",),
    "script-src": ("'self'",),
    "style-src": ("'self'",),
    "img-src": ("'self'", "data:"),
    "connect-src": ("'self'",),
    "object-src": ("'none'",),
    "base-uri": ("'none'",),
    "form-action": ("'self'",),
    "frame-ancestors": ("'none'",),
}

Loosened = dict[str, tuple[str, ...]]


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def policy_for(request: HttpRequest, extra: Loosened | None = None) -> str:
    """Return the policy for an answer to ``request``, with ``extra`` sources added per directive."""
    directives = {name: list(values) for name, values in BASE.items()}
    try:
        host = request.get_host()
    except DisallowedHost:
        host = ""
    if host:
        # 'self' covers same-origin sockets in current browsers; older ones need ws(s) spelled out.
        directives["connect-src"] += [f"ws://{host}", f"wss://{host}"]
    oidc = getattr(settings, "OIDC_SIGN_IN", None)
    if oidc is not None:
        directives["form-action"].append(_origin(oidc.issuer))
    for name, values in (extra or {}).items():
        directives.setdefault(name, []).extend(values)
    return "; ".join(f"{name} {' '.join(values)}" for name, values in directives.items())


class ContentSecurityPolicyMiddleware:
    """Add the policy to every answer that has none of its own."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if HEADER not in response:
            response[HEADER] = policy_for(request, getattr(response, "piweb_csp_extra", None))
        return response


def loosened(view: Callable[..., Any], **extra: tuple[str, ...]) -> Callable[..., Any]:
    """Wrap ``view`` so its answers' policy adds ``extra`` sources (``style_src=("'unsafe-inline'",)``)."""
    directives = {name.replace("_", "-"): values for name, values in extra.items()}

    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        response = view(request, *args, **kwargs)
        response.piweb_csp_extra = directives
        return response

    return wrapped
