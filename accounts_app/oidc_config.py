"""The identity provider's configuration, read from the environment. No Django imports: settings use it.

``PIWEB_OIDC_TEAM_MAP`` maps provider groups to piweb teams and roles, e.g.
``eng=Engineering:editor,ops=Ops:viewer``; several groups may name one team (the highest role wins).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["ROLE_RANK", "ConfigError", "OidcConfig", "TeamGrant", "parse_team_map", "read_config"]

# Team roles from least to most; a user in several groups mapped to one team gets the highest.
ROLE_RANK = {"viewer": 0, "editor": 1, "owner": 2}


class ConfigError(ValueError):
    """A setting that cannot be used; the message names it."""


@dataclass(frozen=True, slots=True)
class TeamGrant:
    """Membership of ``team`` with ``role`` for everyone in the provider group ``group``."""

    group: str
    team: str
    role: str


@dataclass(frozen=True, slots=True, kw_only=True)
class OidcConfig:
    issuer: str
    client_id: str
    client_secret: str
    name: str = "Sign in with SSO"
    groups_claim: str = "groups"
    team_map: tuple[TeamGrant, ...] = field(default_factory=tuple)

    def teams_for(self, groups: object) -> dict[str, str]:
        """Return team name → role for a user in ``groups`` (a list of names from the token)."""
        names = {g for g in groups if isinstance(g, str)} if isinstance(groups, list | tuple) else set()
        roles: dict[str, str] = {}
        for grant in self.team_map:
            if grant.group in names and ROLE_RANK[grant.role] > ROLE_RANK.get(roles.get(grant.team, ""), -1):
                roles[grant.team] = grant.role
        return roles

    @property
    def managed_teams(self) -> frozenset[str]:
        """The teams whose membership the provider decides."""
        return frozenset(grant.team for grant in self.team_map)


def parse_team_map(text: str) -> tuple[TeamGrant, ...]:
    """Parse ``group=Team:role,…``; raise ConfigError naming the bad item."""
    grants: list[TeamGrant] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        group, eq, rest = item.partition("=")
        team, colon, role = rest.rpartition(":")
        if not eq or not group.strip():
            raise ConfigError(f"PIWEB_OIDC_TEAM_MAP: {item!r} is not group=Team:role")
        if not colon or role.strip() not in ROLE_RANK:
            raise ConfigError(f"PIWEB_OIDC_TEAM_MAP: {item!r} needs a role, one of {', '.join(ROLE_RANK)}")
        if not team.strip():
            raise ConfigError(f"PIWEB_OIDC_TEAM_MAP: {item!r} names no team")
        grants.append(TeamGrant(group=group.strip(), team=team.strip(), role=role.strip()))
    return tuple(grants)


def read_config(env: Mapping[str, str]) -> OidcConfig | None:
    """Return the provider's configuration, or None when ``PIWEB_OIDC_ISSUER`` is unset."""
    issuer = env.get("PIWEB_OIDC_ISSUER", "").strip()
    if not issuer:
        return None
    missing = [name for name in ("PIWEB_OIDC_CLIENT_ID", "PIWEB_OIDC_CLIENT_SECRET") if not env.get(name)]
    if missing:
        raise ConfigError(f"PIWEB_OIDC_ISSUER is set, so {' and '.join(missing)} must be set too")
    return OidcConfig(
        issuer=issuer.rstrip("/"),
        client_id=env["PIWEB_OIDC_CLIENT_ID"],
        client_secret=env["PIWEB_OIDC_CLIENT_SECRET"],
        name=env.get("PIWEB_OIDC_NAME", "").strip() or "Sign in with SSO",
        groups_claim=env.get("PIWEB_OIDC_GROUPS_CLAIM", "").strip() or "groups",
        team_map=parse_team_map(env.get("PIWEB_OIDC_TEAM_MAP", "")),
    )
