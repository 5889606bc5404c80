"""How allauth signs people in for piweb: the nonce is checked, accounts are linked only by verified email,
and the first sign-in creates the user without asking anything more."""

from __future__ import annotations

import logging
from typing import Any

from allauth.account.adapter import DefaultAccountAdapter
from allauth.account.models import EmailAddress
from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from allauth.socialaccount.models import SocialLogin
from allauth.socialaccount.providers.base.constants import AuthError
from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

__all__ = ["AccountAdapter", "SocialAccountAdapter", "refusal"]

log = logging.getLogger(__name__)


def refusal(request: HttpRequest, message: str, *, status: int = 401) -> HttpResponse:
    """Return the page that says why a sign-in with the identity provider was refused."""
    return render(request, "socialaccount/authentication_error.html", {"message": message}, status=status)


def _trust_matched_address(sociallogin: SocialLogin) -> None:
    """Record the address an account was matched by as verified, so allauth keeps its password.

    piweb has no self-sign-up: an address on an account was put there by staff, and the provider has just
    said it is verified too (allauth would otherwise wipe the password, fearing a self-registered squatter).
    """
    email = getattr(sociallogin, "_did_authenticate_by_email", None)
    if email:
        EmailAddress.objects.update_or_create(
            user=sociallogin.user, email=email, defaults={"verified": True, "primary": True}
        )


class AccountAdapter(DefaultAccountAdapter):
    """allauth's account side, answering on piweb's own pages (allauth's account routes are not served)."""

    def is_open_for_signup(self, request: HttpRequest) -> bool:
        # Only the identity provider signs people up (SocialAccountAdapter); there is no sign-up form.
        return False

    def respond_user_inactive(self, request: HttpRequest, user: Any) -> HttpResponse:
        return refusal(request, "This account is deactivated. Ask a piweb administrator.", status=403)


class SocialAccountAdapter(DefaultSocialAccountAdapter):
    def pre_social_login(self, request: HttpRequest, sociallogin: SocialLogin) -> None:
        claims = (sociallogin.account.extra_data or {}).get("id_token") or {}
        expected = (sociallogin.state or {}).get("nonce")
        if not expected or claims.get("nonce") != expected:
            raise ImmediateHttpResponse(
                refusal(
                    request, "The identity provider's token does not answer this sign-in (its nonce differs)."
                )
            )
        if sociallogin.is_existing:
            # Linked before, or matched just now by an address the provider says is verified.
            _trust_matched_address(sociallogin)
            return
        # Not linked yet and not matched by a verified email: an account holding the address stays apart.
        # The page names no account and no address: whoever signs in may not own the one they claimed.
        email = (sociallogin.user.email or "").strip()
        if email and get_user_model().objects.filter(email__iexact=email).exists():
            raise ImmediateHttpResponse(
                refusal(
                    request,
                    "This sign-in could not be completed: the identity provider does not say your email "
                    "address is verified. Ask the provider's administrator to verify it, or sign in with "
                    "your password.",
                    status=403,
                )
            )

    def is_auto_signup_allowed(self, request: HttpRequest, sociallogin: SocialLogin) -> bool:
        return True

    def is_open_for_signup(self, request: HttpRequest, sociallogin: SocialLogin) -> bool:
        return True

    def on_authentication_error(
        self,
        request: HttpRequest,
        provider: Any,
        error: Any = None,
        exception: Any = None,
        extra_context: Any = None,
    ) -> None:
        log.warning("sign-in with the identity provider refused: %s %s", error, exception)
        if error == AuthError.CANCELLED:
            raise ImmediateHttpResponse(
                refusal(request, "The sign-in was cancelled at the identity provider.")
            )
        if exception is not None and type(exception).__name__ == "TokenRefused":
            raise ImmediateHttpResponse(refusal(request, str(exception)))
        if exception is None:
            raise ImmediateHttpResponse(
                refusal(
                    request,
                    "This answer from the identity provider does not belong to a sign-in started in this "
                    "browser (its state is unknown or was used already). Start the sign-in again.",
                )
            )
        raise ImmediateHttpResponse(
            refusal(request, f"The sign-in with the identity provider did not complete ({exception}).")
        )
