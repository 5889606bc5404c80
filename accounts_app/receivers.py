"""At every sign-in with the identity provider, its groups decide the user's memberships of mapped teams."""

from __future__ import annotations

from typing import Any

from allauth.account.signals import user_logged_in
from django.conf import settings
from django.dispatch import receiver

from core.actors import IDENTITY_PROVIDER
from teams.facade import services as team_services


def groups_of(sociallogin: Any, claim: str) -> list[str]:
    """Return the groups the provider named, from the userinfo answer or else the id-token."""
    data = sociallogin.account.extra_data or {}
    for source in (data.get("userinfo") or {}, data.get("id_token") or {}):
        if claim in source:
            value = source[claim]
            if isinstance(value, str):
                return [value]
            return [g for g in value if isinstance(g, str)] if isinstance(value, list) else []
    return []


@receiver(user_logged_in, dispatch_uid="piweb-oidc-team-sync")
def sync_teams(sender: Any, request: Any, user: Any, sociallogin: Any = None, **kwargs: Any) -> None:
    config = settings.OIDC_SIGN_IN
    if sociallogin is None or config is None or not config.team_map:
        return
    roles = config.teams_for(groups_of(sociallogin, config.groups_claim))
    team_services.sync_team_memberships(
        actor=IDENTITY_PROVIDER, user=user, roles=roles, managed=config.managed_teams
    )
