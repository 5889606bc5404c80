"""The action log's verbs for teams."""

from enum import StrEnum

from actionlog.facade import verbs


@verbs("teams")
class Action(StrEnum):
    TEAM_CREATE = "team_create"
    TEAM_INVITE = "team_invite"
    TEAM_ACCEPT = "team_accept"
    TEAM_DECLINE = "team_decline"
    TEAM_ROLE = "team_role"
    TEAM_LEAVE = "team_leave"
    TEAM_REMOVE = "team_remove"
    TEAM_WITHDRAW = "team_withdraw"
    TEAM_SETTINGS = "team_settings"
    # A membership added, changed or removed on the identity provider's word at sign-in.
    TEAM_SYNC = "team_sync"
