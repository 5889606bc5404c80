"""Who may take part in a session's discussion.

Every signed-in reader of a session reads its comments, resolves and reopens threads, and can be
mentioned. Writing a comment needs more: the owner and editors always may; a team viewer may when the
team lets its viewers comment (``TeamDiscussion``, on unless the team turns it off). A share-link holder
reads the comments in its scope and writes nothing.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Q, QuerySet

from core.actors import Actor, LinkActor, SystemActor, user_of
from sessions_app.facade import ChatSession, SessionShare, access

__all__ = ["COMMENT_REFUSED", "LINKS_REFUSED", "readers", "require_commenter", "require_reader"]

COMMENT_REFUSED = "Viewers of this session may not comment: the team sharing it has turned that off."
LINKS_REFUSED = "A share link may read comments but not write them; sign in to take part."


def require_reader(actor: Actor, session: ChatSession, grant: access.Access | None = None) -> access.Access:
    """Return the actor's read grant if they are a signed-in reader (or the server), else raise."""
    if isinstance(actor, LinkActor) or (grant is not None and grant.via_link):
        raise access.Forbidden(LINKS_REFUSED)
    if not isinstance(actor, SystemActor) and not getattr(actor, "is_authenticated", False):
        raise access.NotSignedIn()
    return access.authorize(actor, session, access.READ, grant=grant)


def require_commenter(
    actor: Actor, session: ChatSession, grant: access.Access | None = None
) -> access.Access:
    """Return the actor's grant if they may write comments on the session, else raise."""
    grant = require_reader(actor, session, grant)
    if grant.can_write or isinstance(actor, SystemActor):
        return grant
    allowed = SessionShare.objects.filter(session=session, team__memberships__user=user_of(actor)).filter(
        Q(team__discussion__isnull=True) | Q(team__discussion__viewers_may_comment=True)
    )
    if not allowed.exists():
        raise access.Forbidden(COMMENT_REFUSED)
    return grant


def readers(session: ChatSession) -> QuerySet[Any]:
    """Return the active accounts that may read the session: its owner and the members of its teams."""
    shared = SessionShare.objects.filter(session=session).values("team_id")
    return (
        get_user_model()
        .objects.filter(is_active=True)
        .filter(Q(pk=session.owner_id) | Q(team_memberships__team_id__in=shared))
        .distinct()
    )
