"""Failed sign-ins are limited per client address and per username (login page and ``POST /api/token/``).

Only failures count, so a user who signs in normally is never slowed down; a guesser is stopped by
whichever limit is reached first, whether they try many passwords for one name or one password for many
names. Counts live in the shared cache (Redis in production), a sliding window per key.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.views import LoginView
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

from core.proxies import client_address

__all__ = ["PASSWORD_LOGIN_OFF", "SigninThrottle", "Throttled", "ThrottledLoginView", "admin_sign_in"]

PASSWORD_LOGIN_OFF = "Password sign-in is turned off on this server: sign in with the identity provider."


@dataclass(frozen=True, slots=True)
class Throttled:
    """Sign-ins are refused for ``retry_after`` more seconds."""

    retry_after: int

    @property
    def message(self) -> str:
        return f"Too many failed sign-ins. Try again in {self.retry_after} seconds."


def _parse_rate(rate: str) -> tuple[int, int]:
    count, _, period = rate.partition("/")
    seconds = {"s": 1, "m": 60, "h": 3600, "d": 86400}[period.strip()[:1].lower()]
    return int(count), seconds


def _client(request: Any) -> str:
    # REMOTE_ADDR, set by core.proxies from the peer and only trusted proxies' X-Forwarded-For.
    return client_address(request.META.get("REMOTE_ADDR"), request.META.get("HTTP_X_FORWARDED_FOR"))


def _key(kind: str, value: str) -> str:
    # Hashed: usernames are arbitrary client text, cache keys are not.
    return f"signin-failures:{kind}:{hashlib.sha256(value.encode('utf-8', 'surrogatepass')).hexdigest()}"


class SigninThrottle:
    """Check before authenticating; record after a failure."""

    def __init__(self, request: Any, username: str) -> None:
        self.keys = [
            (_key("client", _client(request)), _parse_rate(settings.PIWEB_LOGIN_RATE_PER_CLIENT)),
            (_key("username", username.strip().lower()), _parse_rate(settings.PIWEB_LOGIN_RATE_PER_USERNAME)),
        ]

    def check(self) -> Throttled | None:
        """Return the wait when either limit is reached, else None."""
        now = time.time()
        wait = 0.0
        for key, (count, period) in self.keys:
            history = [t for t in cache.get(key, []) if t > now - period]
            if len(history) >= count:
                wait = max(wait, history[-count] + period - now)
        return Throttled(max(1, int(wait + 0.999))) if wait > 0 else None

    def failed(self) -> None:
        """Count one failed attempt against the client and the username."""
        now = time.time()
        for key, (count, period) in self.keys:
            history = [t for t in cache.get(key, []) if t > now - period][-count:]
            cache.set(key, [*history, now], period)


class ThrottledLoginView(LoginView):
    """Django's login page, refusing with 429 once failed sign-ins pass either limit."""

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["password_login"] = settings.PIWEB_PASSWORD_LOGIN
        oidc = settings.OIDC_SIGN_IN
        # The provider's sign-in route (accounts_app) under the one provider id settings configure.
        context["sso_url"] = reverse("openid_connect_login", args=["sso"]) if oidc else None
        context["sso_name"] = oidc.name if oidc else ""
        return context

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not settings.PIWEB_PASSWORD_LOGIN:
            context = self.get_context_data(throttled=PASSWORD_LOGIN_OFF)
            return self.render_to_response(context, status=403)
        throttle = SigninThrottle(request, str(request.POST.get("username", "")))
        refused = throttle.check()
        if refused is not None:
            response = self.render_to_response(self.get_context_data(throttled=refused.message), status=429)
            response["Retry-After"] = str(refused.retry_after)
            return response
        response = super().post(request, *args, **kwargs)
        if not request.user.is_authenticated:
            throttle.failed()
        return response


def admin_sign_in(request: HttpRequest) -> HttpResponse:
    """Send the admin's sign-in to the site's one sign-in page, keeping where it was going.

    The admin's own password form would skip the password switch and the failed sign-in limits (staff
    accounts are the ones most worth guessing); the site's page applies both and offers the identity
    provider. The admin itself still requires the staff flag afterwards.
    """
    target = request.GET.get("next") or reverse("admin:index")
    return HttpResponseRedirect(f"{reverse('login')}?{urlencode({'next': target})}")
