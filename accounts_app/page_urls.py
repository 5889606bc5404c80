"""Sign-in with the identity provider: allauth's openid_connect routes, with piweb's verifying views."""

from __future__ import annotations

from django.urls import path

from accounts_app import oidc

urlpatterns = [
    path("accounts/oidc/<str:provider_id>/login/", oidc.SignInView.as_view(), name="openid_connect_login"),
    path(
        "accounts/oidc/<str:provider_id>/login/callback/",
        oidc.CallbackView.as_view(),
        name="openid_connect_callback",
    ),
]
