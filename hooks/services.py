"""Hook use cases: create, change (pause and resume), rotate the secret, delete, send a test, replay a
delivery; and ``emit_event``, which the apps' writes call to write an event's deliveries.

Each management use case authorizes its actor (a personal hook: its owner; a team hook: the team's
owners, ``teams.access``), writes, records one action-log row and queues its delivery after commit, in
one transaction; staff pause, resume and delete any hook from the admin through the same use cases
(``as_staff``, logged ``by_staff``). ``emit_event`` runs inside the transaction of the write that caused
the event, whose own row logs it: its deliveries commit or roll back with that write and leave only after
it commits.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterable, Mapping
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from actionlog.facade import record_action
from core.actors import Actor, SystemActor, actor_name, user_of
from core.errors import Forbidden, NotSignedIn, NotVisible
from core.staff import authorize_staff
from core.tasks import enqueue
from hooks.domain import events as kinds
from hooks.models import Delivery, Hook
from hooks.targets import InvalidTarget, check_url
from hooks.verbs import Action
from pitree.storable import check_text
from sessions_app.facade import ChatSession, SessionShare
from teams.facade import Team, team_of

__all__ = [
    "HOOK_WORKER",
    "InvalidHook",
    "create_hook",
    "delete_hook",
    "emit_event",
    "may_hear",
    "replay_delivery",
    "rotate_secret",
    "send_ping",
    "update_hook",
]

log = logging.getLogger(__name__)

HOOK_WORKER = SystemActor("hook-worker")
MAX_NAME_CHARS = 100
SHORT_TEXT = 280  # the most of any text (a comment, an error) a payload carries


class InvalidHook(ValueError):
    """A hook's settings cannot be used; ``field`` names the request field at fault."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.field = field


# -- who manages a hook -----------------------------------------------------------------------------------


def _signed_in(actor: Actor) -> Any:
    user = user_of(actor)
    if user is None:
        raise NotSignedIn()
    return user


def _owned_team(user: Any, team_id: int) -> Team:
    try:
        return team_of(user, team_id, owner=True)
    except Forbidden as exc:
        raise Forbidden("Only the team's owners manage its hooks.") from exc


def managed_hook(actor: Actor, hook_id: int) -> Hook:
    """Return a hook the actor manages: NotVisible if they may not see it, Forbidden for a team member
    who does not own the team."""
    user = _signed_in(actor)
    hook = Hook.objects.select_related("team", "owner").filter(pk=hook_id).first()
    if hook is None:
        raise NotVisible(f"Hook not found: {hook_id}")
    if hook.team_id is not None:
        _owned_team(user, hook.team_id)
    elif hook.owner_id != user.pk:
        raise NotVisible(f"Hook not found: {hook_id}")
    return hook


def _staff_hook(actor: Actor, hook_id: int, permission: str) -> Hook:
    """Return any hook, for staff with ``permission`` acting from the admin."""
    authorize_staff(actor, permission)
    hook = Hook.objects.select_related("team", "owner").filter(pk=hook_id).first()
    if hook is None:
        raise NotVisible(f"Hook not found: {hook_id}")
    return hook


def _staff(as_staff: bool) -> dict[str, Any]:
    """The log row's mark of a change made from the admin."""
    return {"by_staff": True} if as_staff else {}


def hooks_of(actor: Actor, *, team_id: int | None = None) -> QuerySet[Hook]:
    """Return the actor's personal hooks, or (``team_id``) the team's, which only its owners see."""
    user = _signed_in(actor)
    if team_id is not None:
        team = _owned_team(user, team_id)
        return Hook.objects.filter(team=team).select_related("team").order_by("name", "pk")
    return Hook.objects.filter(owner=user).order_by("name", "pk")


# -- validation --------------------------------------------------------------------------------------------


def _name(value: object) -> str:
    if not isinstance(value, str):
        raise InvalidHook("name must be text.", "name")
    try:
        check_text(value, "name", max_chars=MAX_NAME_CHARS)
    except ValueError as exc:
        raise InvalidHook(str(exc), "name") from exc
    name = value.strip()
    if not name:
        raise InvalidHook("name must not be empty.", "name")
    return name


def _url(value: object) -> str:
    try:
        return check_url(value)
    except InvalidTarget as exc:
        raise InvalidHook(str(exc), "url") from exc


def _events(value: object) -> list[str]:
    try:
        return kinds.check_events(value)
    except kinds.InvalidEvents as exc:
        raise InvalidHook(str(exc), "events") from exc


def _format(value: object) -> str:
    if value not in Hook.Format.values:
        raise InvalidHook(f"format must be one of {', '.join(Hook.Format.values)}.", "format")
    return str(value)


def _host(url: str) -> str:
    """What the action log keeps of a URL: its host (a Slack URL's path is itself a secret)."""
    return urlsplit(url).hostname or ""


def new_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(32)


# -- management use cases -----------------------------------------------------------------------------------


def create_hook(
    *,
    actor: Actor,
    name: object,
    url: object,
    events: object,
    format: object = Hook.Format.JSON,
    team_id: int | None = None,
) -> tuple[Hook, str]:
    """Create a personal hook, or a team's (its owners only); return it and its secret, shown this once."""
    user = _signed_in(actor)
    team = _owned_team(user, team_id) if team_id is not None else None
    fields = {"name": _name(name), "url": _url(url), "events": _events(events), "format": _format(format)}
    secret = new_secret()
    with transaction.atomic():
        hook = Hook.objects.create(
            team=team, owner=None if team else user, created_by=user, secret=secret, **fields
        )
        record_action(
            actor=actor,
            action=Action.HOOK_CREATE,
            session=None,
            team=team,
            hook=hook.pk,
            host=_host(hook.url),
            events=hook.events,
            format=hook.format,
        )
    return hook, secret


def update_hook(*, actor: Actor, hook_id: int, changes: Mapping[str, object], as_staff: bool = False) -> Hook:
    """Change a hook's name, URL, events or format, or pause (``active`` false) and resume it. A resumed
    hook sends what waited while it was paused.

    ``as_staff``: a staff member changes any hook from the admin; the row says ``by_staff``.
    """
    hook = _staff_hook(actor, hook_id, "hooks.change_hook") if as_staff else managed_hook(actor, hook_id)
    checks = {"name": _name, "url": _url, "events": _events, "format": _format}
    fields: dict[str, Any] = {}
    for key, value in changes.items():
        if key == "active":
            if not isinstance(value, bool):
                raise InvalidHook("active must be true or false.", "active")
            fields["active"] = value
        elif key in checks:
            fields[key] = checks[key](value)
    changed = {k: v for k, v in fields.items() if getattr(hook, k) != v}
    if not changed:
        return hook
    resumed = changed.get("active") is True
    with transaction.atomic():
        for key, value in changed.items():
            setattr(hook, key, value)
        hook.save(update_fields=list(changed))
        detail = {k: (_host(v) if k == "url" else v) for k, v in changed.items()}
        record_action(
            actor=actor,
            action=Action.HOOK_CHANGE,
            session=None,
            team=hook.team,
            hook=hook.pk,
            **detail,
            **_staff(as_staff),
        )
        if resumed:
            waiting = Delivery.objects.filter(hook=hook, status=Delivery.Status.PENDING)
            ids = list(waiting.values_list("pk", flat=True))
            waiting.update(next_attempt_at=timezone.now())
            transaction.on_commit(partial(queue_deliveries, ids))
    return hook


def rotate_secret(*, actor: Actor, hook_id: int) -> tuple[Hook, str]:
    """Give a hook a new secret (shown this once); deliveries from now on are signed with it."""
    hook = managed_hook(actor, hook_id)
    secret = new_secret()
    with transaction.atomic():
        hook.secret = secret
        hook.save(update_fields=["secret"])
        record_action(actor=actor, action=Action.HOOK_ROTATE, session=None, team=hook.team, hook=hook.pk)
    return hook, secret


def delete_hook(*, actor: Actor, hook_id: int, as_staff: bool = False) -> None:
    """Delete a hook with its delivery log; what was waiting is not sent.

    ``as_staff``: a staff member deletes any hook from the admin; the row says ``by_staff``.
    """
    hook = _staff_hook(actor, hook_id, "hooks.delete_hook") if as_staff else managed_hook(actor, hook_id)
    with transaction.atomic():
        record_action(
            actor=actor,
            action=Action.HOOK_DELETE,
            session=None,
            team=hook.team,
            hook=hook.pk,
            name=hook.name,
            host=_host(hook.url),
            **_staff(as_staff),
        )
        hook.delete()


def send_ping(*, actor: Actor, hook_id: int) -> Delivery:
    """Send a test delivery (event ``ping``) to a hook, paused or not, and log it like any other."""
    hook = managed_hook(actor, hook_id)
    with transaction.atomic():
        delivery = _write(hook, kinds.PING, session=None, actor=actor, data={"text": "Test delivery"}, key="")
        record_action(
            actor=actor,
            action=Action.HOOK_PING,
            session=None,
            team=hook.team,
            hook=hook.pk,
            delivery=delivery.pk,
        )
        transaction.on_commit(partial(queue_deliveries, [delivery.pk]))
    return delivery


def replay_delivery(*, actor: Actor, hook_id: int, delivery_id: int) -> Delivery:
    """Send a logged delivery again, as a new delivery (its own id, ``replayOf`` the first), if the hook's
    recipient may still read its session."""
    hook = managed_hook(actor, hook_id)
    original = Delivery.objects.filter(pk=delivery_id, hook=hook).select_related("session").first()
    if original is None:
        raise NotVisible(f"Delivery not found: {delivery_id}")
    if original.session_id is not None and not may_hear(hook, original.session_id):
        raise Forbidden(
            "The hook's recipient may no longer read this session: its events are not sent again."
        )
    with transaction.atomic():
        copy = Delivery(hook=hook, event=original.event, session_id=original.session_id, replay_of=original)
        copy.payload = {**original.payload, "id": str(copy.public_id), "replayOf": str(original.public_id)}
        copy.next_attempt_at = timezone.now()
        copy.save()
        record_action(
            actor=actor,
            action=Action.HOOK_REPLAY,
            session=original.session,
            team=hook.team,
            hook=hook.pk,
            delivery=copy.pk,
            replayOf=original.pk,
        )
        transaction.on_commit(partial(queue_deliveries, [copy.pk]))
    return copy


# -- events -------------------------------------------------------------------------------------------------


def may_hear(hook: Hook, session_id: int) -> bool:
    """Return whether the hook's recipient may read the session now: a team hook, if it is shared with
    the team; a personal hook, if its owner may read it (theirs, or shared with a team of theirs)."""
    if hook.team_id is not None:
        return SessionShare.objects.filter(session_id=session_id, team_id=hook.team_id).exists()
    return ChatSession.objects.visible_to(hook.owner).filter(pk=session_id).exists()


def _short(value: Any) -> Any:
    """Cut every text in an event's data to a short excerpt: a payload names things, it does not copy them."""
    if isinstance(value, str):
        return value if len(value) <= SHORT_TEXT else value[: SHORT_TEXT - 1] + "…"
    if isinstance(value, Mapping):
        return {str(k): _short(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_short(v) for v in value[:50]]
    return value


def _session_url(session_id: int) -> str:
    return f"{settings.PIWEB_BASE_URL.rstrip('/')}/sessions/{session_id}/"


def _payload(
    delivery: Delivery, hook: Hook, kind: str, session: ChatSession | None, actor: Actor | None, data: Any
) -> dict[str, Any]:
    return {
        "id": str(delivery.public_id),
        "event": kind,
        "occurredAt": timezone.now().isoformat(),
        "hook": {"id": hook.pk, "name": hook.name},
        "actor": {"name": actor_name(actor) or None} if actor is not None else None,
        "team": {"id": hook.team_id, "name": hook.team.name} if hook.team is not None else None,
        "session": {"id": session.pk, "title": _short(session.title), "url": _session_url(session.pk)}
        if session is not None
        else None,
        "data": _short(data),
    }


def _write(
    hook: Hook, kind: str, *, session: ChatSession | None, actor: Actor | None, data: Any, key: str
) -> Delivery:
    delivery = Delivery(
        hook=hook, event=kind, session=session, dedupe_key=key, next_attempt_at=timezone.now()
    )
    delivery.payload = _payload(delivery, hook, kind, session, actor, data)
    delivery.save()
    return delivery


def listeners(kind: str, *, session: ChatSession, team: Team | None, users: Iterable[Any]) -> list[Hook]:
    """Return the active hooks that chose ``kind`` and may hear of the session now.

    Team hooks: of the teams the session is shared with (only ``team``'s when given); personal hooks:
    of ``users`` (those the event is addressed to) who may read the session.
    """
    chosen = Hook.objects.filter(active=True, events__contains=[kind]).select_related("team", "owner")
    found: list[Hook] = []
    if kind not in kinds.PERSONAL_ONLY:
        shared = SessionShare.objects.filter(session=session)
        if team is not None:
            shared = shared.filter(team=team)
        found += list(chosen.filter(team_id__in=shared.values("team_id")).order_by("pk"))
    people = {getattr(u, "pk", u) for u in users if u is not None}
    if people:
        readers = set(ChatSession.objects.filter(pk=session.pk).values_list("owner_id", flat=True))
        readers |= set(
            SessionShare.objects.filter(session=session, team__memberships__user_id__in=people).values_list(
                "team__memberships__user_id", flat=True
            )
        )
        found += list(chosen.filter(owner_id__in=people & readers).order_by("pk"))
    return found


def emit_event(
    kind: str,
    *,
    session: ChatSession,
    actor: Actor | None,
    data: Mapping[str, Any],
    team: Team | None = None,
    users: Iterable[Any] = (),
    key: str = "",
) -> list[Delivery]:
    """Write one delivery per hook that chose ``kind`` and may hear of the session, and queue them after
    the surrounding write commits; return them.

    Call it inside the transaction of the write that caused the event (its action-log row covers this).
    ``team``: only that team's hooks (else every team the session is shared with); ``users``: whose
    personal hooks hear of it (those who may read the session); ``key``: the event's identity, so an
    event announced twice reaches each hook once; ``data``: ids, names and short texts only.
    """
    if kind not in kinds.EVENTS:
        raise ValueError(f"unknown hook event {kind!r}")
    written: list[Delivery] = []
    with transaction.atomic():
        for hook in listeners(kind, session=session, team=team, users=users):
            if key and Delivery.objects.filter(hook=hook, dedupe_key=key).exists():
                continue
            written.append(_write(hook, kind, session=session, actor=actor, data=data, key=key))
        if written:
            transaction.on_commit(partial(queue_deliveries, [d.pk for d in written]))
    return written


def queue_deliveries(ids: Iterable[int]) -> None:
    """Queue the deliveries' first attempts (after commit). A broker that cannot take them delays them
    only: the sweep finds them due (``delivery.sweep_due``)."""
    for pk in ids:
        try:
            enqueue("hooks.deliver", pk)
        except Exception:
            log.warning("hook delivery %s was not queued; the sweep will send it", pk, exc_info=True)
