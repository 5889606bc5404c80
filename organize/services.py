"""Use cases of organizing sessions: pins, team tags, archive and saved filters.

Each function takes an explicit actor, validates, authorizes through ``sessions_app`` access and team
roles, writes and records its action-log row in one transaction, and tells open pages after commit.

Who may do what:

- pin or unpin: anyone signed in who may read the session (a pin is theirs alone);
- create, rename, recolour and delete a team's tags: the team's editors and owners;
- apply or remove a tag: the session must be shared with the tag's team, and the actor either may change
  the session (and is a member of the team) or is one of the team's editors or owners;
- archive or restore: whoever may change the session (its owner, or an editor through a team share);
- save a personal filter: anyone signed in; save or delete a team's filter: its editors and owners;
- staff, from the admin (``as_staff``): delete any tag or saved filter, logged ``by_staff``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from django.db import IntegrityError, transaction
from django.http import QueryDict

from actionlog.facade import record_action
from core import realtime
from core.actors import Actor, user_of
from core.errors import Forbidden, NotSignedIn, NotVisible
from core.staff import authorize_staff
from organize.models import COLOURS, Archived, Pin, SavedFilter, SessionTag, Tag
from organize.verbs import Action
from pitree.storable import check_text
from sessions_app.facade import ChatSession, SessionShare, access
from teams.facade import Team, TeamMembership, team_role

__all__ = [
    "OrganizeError",
    "apply_tag",
    "archive_session",
    "create_tag",
    "delete_saved_filter",
    "delete_tag",
    "may_apply_tag",
    "pin_session",
    "remove_tag",
    "restore_session",
    "save_filter",
    "tag_refusal",
    "unpin_session",
    "update_tag",
]

TEAM_EDITORS = (TeamMembership.Role.OWNER, TeamMembership.Role.EDITOR)
MAX_QUERY = 2000


class OrganizeError(ValueError):
    """Input that cannot be stored (a name too long, a colour nobody offers); answered as 400."""


def _user(actor: Actor) -> Any:
    user = user_of(actor)
    if user is None:
        raise NotSignedIn()
    return user


def _staff(as_staff: bool) -> dict[str, Any]:
    """The log row's mark of a change made from the admin."""
    return {"by_staff": True} if as_staff else {}


def _announce(session_id: int) -> None:
    # Open pages of the session re-read its tags, pin and archive state.
    transaction.on_commit(partial(realtime.broadcast, session_id, "organized"))


# -- pins ------------------------------------------------------------------------------------------------


def pin_session(*, actor: Actor, session: ChatSession) -> bool:
    """Pin a session for the actor; return False when it was pinned already (nothing written)."""
    user = _user(actor)
    access.authorize(actor, session, access.READ)
    with transaction.atomic():
        _, created = Pin.objects.get_or_create(user=user, session=session)
        if created:
            record_action(actor=actor, action=Action.PIN, session=session)
    return created


def unpin_session(*, actor: Actor, session: ChatSession) -> bool:
    """Unpin a session for the actor; return False when it was not pinned."""
    user = _user(actor)
    access.authorize(actor, session, access.READ)
    with transaction.atomic():
        deleted, _ = Pin.objects.filter(user=user, session=session).delete()
        if deleted:
            record_action(actor=actor, action=Action.UNPIN, session=session)
    return bool(deleted)


# -- tags ------------------------------------------------------------------------------------------------


def _tag_fields(name: str | None, colour: str | None) -> dict[str, str]:
    fields: dict[str, str] = {}
    if name is not None:
        name = " ".join(name.split())
        check_text(name, "the tag's name")
        if not name or len(name) > 40:
            raise OrganizeError("A tag needs a name of 1 to 40 characters")
        if "," in name:
            raise OrganizeError("A tag's name cannot hold a comma")
        fields["name"] = name
    if colour is not None:
        if colour not in COLOURS:
            raise OrganizeError(f"A tag's colour is one of {', '.join(COLOURS)}")
        fields["colour"] = colour
    return fields


def _team_editor(user: Any, team: Team) -> None:
    role = team_role(user, team)
    if role is None:
        raise NotVisible(f"Team not found: {team.pk}")
    if role not in TEAM_EDITORS:
        raise Forbidden("Only the team's editors and owners may change its tags and filters.")


def create_tag(*, actor: Actor, team: Team, name: str, colour: str = "grey") -> Tag:
    user = _user(actor)
    fields = _tag_fields(name, colour)
    _team_editor(user, team)
    try:
        with transaction.atomic():
            tag = Tag.objects.create(team=team, created_by=user, **fields)
            record_action(
                actor=actor, action=Action.TAG_CREATE, session=None, team=team, tag=tag.pk, name=tag.name
            )
    except IntegrityError:
        raise OrganizeError(f"The team has a tag named {fields['name']!r} already") from None
    return tag


def update_tag(*, actor: Actor, tag: Tag, name: str | None = None, colour: str | None = None) -> Tag:
    """Rename or recolour a tag; every session carrying it shows the change."""
    user = _user(actor)
    fields = _tag_fields(name, colour)
    _team_editor(user, tag.team)
    if not fields:
        return tag
    try:
        with transaction.atomic():
            for key, value in fields.items():
                setattr(tag, key, value)
            tag.save(update_fields=list(fields))
            record_action(
                actor=actor, action=Action.TAG_CHANGE, session=None, team=tag.team, tag=tag.pk, **fields
            )
    except IntegrityError:
        raise OrganizeError(f"The team has a tag named {fields.get('name')!r} already") from None
    return tag


def delete_tag(*, actor: Actor, tag: Tag, as_staff: bool = False) -> None:
    """Delete a tag and take it off every session (the sessions themselves are untouched).

    ``as_staff``: a staff member deletes any team's tag from the admin; the row says ``by_staff``.
    """
    if as_staff:
        authorize_staff(actor, "organize.delete_tag")
    else:
        _team_editor(_user(actor), tag.team)
    with transaction.atomic():
        record_action(
            actor=actor,
            action=Action.TAG_DELETE,
            session=None,
            team=tag.team,
            tag=tag.pk,
            name=tag.name,
            **_staff(as_staff),
        )
        tag.delete()


def may_apply_tag(user: Any, grant: access.Access, tag: Tag) -> str:
    """Why ``user`` (whose grant on the session is ``grant``) may not apply or remove ``tag``, or ""."""
    shared = SessionShare.objects.filter(session=grant.session, team=tag.team).exists()
    return tag_refusal(team_role(user, tag.team), shared=shared, can_write=grant.can_write, tag=tag)


def tag_refusal(role: str | None, *, shared: bool, can_write: bool, tag: Tag) -> str:
    """The rule of ``may_apply_tag`` on what it reads (the bulk preview reads it once for a selection)."""
    if role is None:
        return "You are not a member of the tag's team."
    if not shared:
        return f"The session is not shared with {tag.team.name}."
    if not can_write and role not in TEAM_EDITORS:
        return "You may read this session but not tag it."
    return ""


def _tag_grant(actor: Actor, session: ChatSession, tag: Tag) -> Any:
    user = _user(actor)
    grant = access.authorize(actor, session, access.READ)
    if team_role(user, tag.team) is None:
        raise NotVisible(f"Tag not found: {tag.pk}")  # another team's tags are not ours to know of
    why = may_apply_tag(user, grant, tag)
    if why:
        raise Forbidden(why)
    return user


def apply_tag(*, actor: Actor, session: ChatSession, tag: Tag) -> bool:
    """Put a team's tag on a session shared with that team; False when it was there already."""
    user = _tag_grant(actor, session, tag)
    with transaction.atomic():
        _, created = SessionTag.objects.get_or_create(tag=tag, session=session, defaults={"added_by": user})
        if created:
            record_action(actor=actor, action=Action.TAG_APPLY, session=session, team=tag.team, tag=tag.pk)
            _announce(session.pk)
    return created


def remove_tag(*, actor: Actor, session: ChatSession, tag: Tag) -> bool:
    """Take a tag off a session; False when it was not there."""
    _tag_grant(actor, session, tag)
    with transaction.atomic():
        deleted, _ = SessionTag.objects.filter(tag=tag, session=session).delete()
        if deleted:
            record_action(actor=actor, action=Action.TAG_REMOVE, session=session, team=tag.team, tag=tag.pk)
            _announce(session.pk)
    return bool(deleted)


# -- archive ---------------------------------------------------------------------------------------------


def archive_session(*, actor: Actor, session: ChatSession) -> bool:
    """Hide a session from the default list (nothing is deleted); False when it was archived already."""
    access.authorize(actor, session, access.WRITE)
    with transaction.atomic():
        _, created = Archived.objects.get_or_create(session=session, defaults={"archived_by": user_of(actor)})
        if created:
            record_action(actor=actor, action=Action.ARCHIVE, session=session)
            _announce(session.pk)
    return created


def restore_session(*, actor: Actor, session: ChatSession) -> bool:
    """Show an archived session in the default list again; False when it was not archived."""
    access.authorize(actor, session, access.WRITE)
    with transaction.atomic():
        deleted, _ = Archived.objects.filter(session=session).delete()
        if deleted:
            record_action(actor=actor, action=Action.RESTORE, session=session)
            _announce(session.pk)
    return bool(deleted)


# -- saved filters ---------------------------------------------------------------------------------------


def normalized_query(query: str) -> str:
    """The list's query string without its page; what opening the filter puts after ``/?``."""
    query = query.strip().lstrip("?")
    check_text(query, "the filter's query")
    if len(query) > MAX_QUERY:
        raise OrganizeError(f"A filter's query is at most {MAX_QUERY} characters")
    params = QueryDict(query, mutable=True)
    params.pop("page", None)
    normalized = params.urlencode()
    if len(normalized) > MAX_QUERY:  # encoding may lengthen it
        raise OrganizeError(f"A filter's query is at most {MAX_QUERY} characters once encoded")
    return normalized


def save_filter(*, actor: Actor, name: str, query: str, team: Team | None = None) -> SavedFilter:
    """Save the list's query string under a name, for the actor or (its editors only) for a team."""
    user = _user(actor)
    name = " ".join(name.split())
    check_text(name, "the filter's name")
    if not name or len(name) > 80:
        raise OrganizeError("A filter needs a name of 1 to 80 characters")
    normalized = normalized_query(query)
    if team is not None:
        _team_editor(user, team)
    with transaction.atomic():
        saved = SavedFilter.objects.create(
            name=name, query=normalized, user=None if team else user, team=team, created_by=user
        )
        record_action(
            actor=actor, action=Action.FILTER_SAVE, session=None, team=team, filter=saved.pk, name=name
        )
    return saved


def delete_saved_filter(*, actor: Actor, saved: SavedFilter, as_staff: bool = False) -> None:
    """Delete one's own filter, or (its editors only) a team's.

    ``as_staff``: a staff member deletes anyone's filter from the admin; the row says ``by_staff``.
    """
    if as_staff:
        authorize_staff(actor, "organize.delete_savedfilter")
    else:
        user = _user(actor)
        if saved.team is not None:
            _team_editor(user, saved.team)
        elif saved.user_id != user.pk:
            raise NotVisible(f"Filter not found: {saved.pk}")
    with transaction.atomic():
        record_action(
            actor=actor,
            action=Action.FILTER_DELETE,
            session=None,
            team=saved.team,
            filter=saved.pk,
            **_staff(as_staff),
        )
        saved.delete()
