"""allauth's ``openid_connect`` provider, made strict: PKCE, a nonce, and an id-token always verified.

allauth skips the id-token's signature when it fetched the token itself (the specification allows it over
TLS); piweb checks it every time, with the issuer piweb was configured with, so a token altered on the way
or by a misbehaving provider never signs anyone in. The nonce sent with the authorization request is kept
in allauth's state and compared in ``adapter.SocialAccountAdapter.pre_social_login``.
"""

from __future__ import annotations

import secrets
from typing import Any

import jwt
import requests
from allauth.socialaccount.internal import jwtkit
from allauth.socialaccount.models import SocialApp, SocialToken
from allauth.socialaccount.providers.oauth2.client import OAuth2Error
from allauth.socialaccount.providers.oauth2.views import OAuth2CallbackView, OAuth2LoginView
from allauth.socialaccount.providers.openid_connect.provider import OpenIDConnectProvider
from allauth.socialaccount.providers.openid_connect.views import OpenIDConnectOAuth2Adapter
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views import View

from accounts_app.oidc_config import OidcConfig

__all__ = ["CallbackView", "SignInProvider", "SignInView"]

# Clock difference tolerated between piweb and the provider when checking expiry.
LEEWAY_SECONDS = 30


class TokenRefused(OAuth2Error):
    """The provider's id-token failed a check; the message says which, for the error page."""


class VerifyingAdapter(OpenIDConnectOAuth2Adapter):
    def _decode_id_token(self, app: SocialApp, id_token: str) -> dict[str, Any]:
        return verify_id_token(
            id_token,
            keys_url=self.openid_config["jwks_uri"],
            issuer=_config().issuer,
            discovered_issuer=str(self.openid_config.get("issuer", "")),
            audience=app.client_id,
        )

    def complete_login(self, request: HttpRequest, app: SocialApp, token: SocialToken, **kwargs: Any) -> Any:
        if not kwargs["response"].get("id_token"):
            raise TokenRefused("The identity provider sent no id-token.")
        return super().complete_login(request, app, token, **kwargs)


def verify_id_token(
    id_token: str, *, keys_url: str, issuer: str, discovered_issuer: str, audience: str
) -> dict[str, Any]:
    """Return the id-token's claims, or raise TokenRefused naming the check that failed."""
    if discovered_issuer.rstrip("/") != issuer.rstrip("/"):
        raise TokenRefused(
            f"The provider at {issuer} calls itself {discovered_issuer!r}; piweb trusts only {issuer}."
        )
    try:
        alg, key = jwtkit.fetch_key(id_token, keys_url, jwtkit.lookup_kid_jwk)
        claims: dict[str, Any] = jwt.decode(
            id_token,
            key=key,
            algorithms=[alg],
            audience=audience,
            leeway=LEEWAY_SECONDS,
            options={"require": ["iss", "sub", "aud", "exp", "iat"], "verify_iss": False},
        )
    except jwt.ExpiredSignatureError:
        raise TokenRefused("The identity provider's token has expired.") from None
    except jwt.InvalidSignatureError:
        raise TokenRefused("The identity provider's token does not match its signing keys.") from None
    except jwt.InvalidAudienceError:
        raise TokenRefused("The identity provider's token was issued for another application.") from None
    except (jwt.PyJWTError, KeyError) as error:
        raise TokenRefused(f"The identity provider's token is not valid ({error}).") from None
    except requests.RequestException:
        raise TokenRefused("The identity provider's signing keys could not be read.") from None
    if str(claims.get("iss", "")).rstrip("/") != issuer.rstrip("/"):
        raise TokenRefused(f"The token was issued by {claims.get('iss')!r}, not by {issuer}.")
    return claims


class SignInProvider(OpenIDConnectProvider):
    """The ``openid_connect`` provider with PKCE always on and a nonce in every request."""

    oauth2_adapter_class = VerifyingAdapter
    pkce_enabled_default = True

    def get_pkce_params(self) -> dict[str, Any]:
        from allauth.socialaccount.providers.oauth2.utils import generate_code_challenge

        return dict(generate_code_challenge())

    def redirect(
        self, request: HttpRequest, process: Any, next_url: Any = None, data: Any = None, **kwargs: Any
    ) -> HttpResponse:
        nonce = secrets.token_urlsafe(24)
        auth_params = kwargs.pop("auth_params", None)
        auth_params = dict(self.get_auth_params() if auth_params is None else auth_params)
        auth_params["nonce"] = nonce
        # Extra keyword arguments are kept in allauth's state, which the callback reads back.
        return super().redirect(
            request, process, next_url, data, auth_params=auth_params, nonce=nonce, **kwargs
        )


def _adapter(request: HttpRequest, provider_id: str) -> VerifyingAdapter:
    return VerifyingAdapter(request, provider_id)


class SignInView(View):
    """Send the browser to the provider (allauth's view, with the verifying adapter).

    Only a POST from the sign-in page's button starts it (CSRF-protected); a GET goes to that page.
    """

    def get(self, request: HttpRequest, provider_id: str) -> HttpResponse:
        return redirect(settings.LOGIN_URL)

    def post(self, request: HttpRequest, provider_id: str) -> HttpResponse:
        try:
            return OAuth2LoginView.adapter_view(_adapter(request, provider_id))(request)
        except SocialApp.DoesNotExist:
            raise Http404("No identity provider is configured.") from None


class CallbackView(View):
    """Finish the sign-in the provider sent the browser back with."""

    def get(self, request: HttpRequest, provider_id: str) -> HttpResponse:
        try:
            return OAuth2CallbackView.adapter_view(_adapter(request, provider_id))(request)
        except SocialApp.DoesNotExist:
            raise Http404("No identity provider is configured.") from None


def _config() -> OidcConfig:
    config = settings.OIDC_SIGN_IN
    if config is None:  # the sign-in routes are mounted only when it is configured
        raise ImproperlyConfigured("OIDC sign-in is not configured")
    return config
