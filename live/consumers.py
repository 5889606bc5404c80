"""Live session views: one socket per open session page, fed by the session's Channels group.

Events are hints, not data. Each carries the session's latest append sequence; the client compares it
with what it holds and fetches ``entries?since=`` when it is behind. The socket also answers a
``sync`` message with the current sequence, so a client that suspects a dropped event (or has just
reconnected) learns how far behind it is without waiting for the next event.

What a socket forwards is decided by ``link_scope.live_event`` for its grant, the same rule REST reads
follow. A socket lives only as long as what it was opened with: its API token, its browser session,
its user, its link and its grant. It joins its session's group and its user's group
(``realtime.viewer_group``); whenever anything that may end its access commits (``signals``), an
announcement there makes it re-read all of that from the database and close when it no longer holds.
It also re-checks on every ``sync``, when its token or link expires, and every ``RECHECK_SECONDS``
(in case an announcement was lost). Once closed it forwards nothing more and answers nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs

import orjson
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer, AsyncWebsocketConsumer
from django.conf import settings
from django.contrib import auth
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest
from django.utils import timezone
from django.utils.module_loading import import_string
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from core import realtime
from live.presence_socket import PresenceMixin
from sessions_app.facade import ApiToken, access, link_scope

# Close codes in the application range: the page shows "no access" instead of retrying forever.
CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
# The grant was narrowed (an editor made a viewer): the page reloads to show what it may still do.
CLOSE_ACCESS_CHANGED = 4409
# The channel layer's Redis did not answer (even after reconnecting): try again later, as the page does.
CLOSE_TRY_AGAIN = 1013
# The one mapping of access refusals to close codes (HTTP statuses for the same refusals: api/errors.py).
# A session the viewer may not see closes as forbidden: the socket never tells "missing" from "hidden".
CLOSE_CODES: dict[type[access.AccessDenied], int] = {
    access.NotSignedIn: CLOSE_UNAUTHENTICATED,
    access.NotVisible: CLOSE_FORBIDDEN,
    access.Forbidden: CLOSE_FORBIDDEN,
}


def close_code(exc: access.AccessDenied) -> int:
    """Return the close code for an access refusal."""
    return CLOSE_CODES.get(type(exc), CLOSE_FORBIDDEN)


# Every socket re-checks this often, besides when its token or link expires and on every announcement.
RECHECK_SECONDS = 60.0
SUBPROTOCOL = "piweb"

ACCESS_EVENTS = link_scope.ACCESS_EVENTS


@dataclass(frozen=True, slots=True)
class Credentials:
    """What a socket was opened with, verified again whenever its access may have changed."""

    user_id: int | None = None  # the signed-in user, or None for a share-link holder
    token: str | None = None  # the API token's stored digest
    browser: str | None = None  # the browser session's key

    @classmethod
    def of(cls, scope: dict[str, Any]) -> Credentials:
        user = scope.get("user")
        if user is None or not user.is_authenticated:
            return cls()
        if scope.get("token_auth"):
            return cls(user.pk, token=scope.get("api_token"))
        session = scope.get("session")
        return cls(user.pk, browser=getattr(session, "session_key", None) if session is not None else None)

    def tags(self) -> set[str]:
        """Return the names announcements give these credentials when they end."""
        return {realtime.credential_tag(s) for s in (self.token, self.browser) if s}


def current_user(credentials: Credentials) -> tuple[Any, datetime | None]:
    """Return the user the credentials stand for now and when they lapse; raise NotSignedIn once they
    no longer hold (the token revoked or expired, the browser signed out, the user deactivated)."""
    if credentials.user_id is None:
        return AnonymousUser(), None
    if credentials.token is not None:
        token = ApiToken.objects.select_related("user").filter(digest=credentials.token).first()
        if token is None or (token.expiry is not None and token.expiry <= timezone.now()):
            raise access.NotSignedIn("The API token was revoked or has expired.")
        if not token.user.is_active:
            raise access.NotSignedIn("The account was deactivated.")
        return token.user, token.expiry
    if credentials.browser is not None:
        # Django's own check of a request's session: the row, the user, is_active, the password hash.
        request = HttpRequest()
        request.session = import_string(f"{settings.SESSION_ENGINE}.SessionStore")(credentials.browser)
        user = auth.get_user(request)
        if user.pk != credentials.user_id:
            raise access.NotSignedIn("Signed out.")
        return user, None
    raise access.NotSignedIn()


@dataclass(frozen=True, slots=True)
class SessionState:
    last_seq: int | None
    leaf_id: str | None
    grant: link_scope.Grant = link_scope.Grant.MEMBER
    can_write: bool = False
    # The first moment the access lapses by itself (token or link expiry), if any.
    deadline: datetime | None = None


def read_state(credentials: Credentials, pk: int, link_token: str | None = None) -> SessionState:
    """Return the session's position as this viewer may see it; raise AccessDenied when they may not."""
    try:
        user, lapses = current_user(credentials)
    except access.NotSignedIn:
        if not link_token:
            raise
        user, lapses = AnonymousUser(), None  # signed out, but the link still lets anyone holding it read
    grant = access.require_access(user, pk, link_token=link_token)
    expiries = [lapses, grant.link.expires_at if grant.link is not None else None]
    deadline = min((e for e in expiries if e is not None), default=None)
    return SessionState(
        link_scope.visible_last_seq(grant),
        grant.leaf_id(),
        link_scope.grant_of(grant),
        grant.can_write,
        deadline,
    )


class SessionConsumer(PresenceMixin, AsyncJsonWebsocketConsumer):
    """Join ``session-<pk>`` after checking read access; forward its events; answer ``sync``; keep the
    viewer's presence (``presence_socket``)."""

    session_pk: int
    group: str
    credentials: Credentials = Credentials()
    link_token: str | None = None
    grant: link_scope.Grant = link_scope.Grant.MEMBER
    can_write: bool = False
    watch: asyncio.Task[None] | None = None
    deadline: datetime | None = None
    ended: bool = False

    async def connect(self) -> None:
        user = self.scope.get("user")
        self.session_pk = int(self.scope["url_route"]["kwargs"]["pk"])
        self.group = realtime.group_name(self.session_pk)
        self.joined: list[str] = []
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        self.link_token = self.scope.get("share_token") or (query.get(access.LINK_PARAM) or [None])[0] or None
        if (user is None or not user.is_authenticated) and not self.link_token:
            await self.close(code=close_code(access.NotSignedIn()))
            return
        self.credentials = Credentials.of(self.scope)
        # Join before checking: a revocation committing meanwhile is then either seen by the check or
        # announced to a group this socket is in. (And an append is seen at least once.)
        groups = [self.group]
        if self.credentials.user_id is not None:
            groups.append(realtime.viewer_group(self.credentials.user_id))
            groups.append(realtime.inbox_group(self.credentials.user_id))
        # All of them are left on the way out, joined or not (leaving a group never joined does nothing).
        self.joined = groups
        try:
            # At once: one wait on Redis instead of one per group, when a whole team connects together.
            await asyncio.gather(*(self.channel_layer.group_add(g, self.channel_name) for g in groups))
        except (RedisConnectionError, RedisTimeoutError, OSError):
            # Accepted, then closed with "try again later": a refused handshake would read as no access.
            self.ended = True
            await self.accept()
            await self.close(code=CLOSE_TRY_AGAIN)
            return
        state = await self.current_state()
        if state is None:
            return
        self.grant, self.can_write = state.grant, state.can_write
        offered = self.scope.get("subprotocols") or []
        await self.accept(subprotocol=SUBPROTOCOL if SUBPROTOCOL in offered else None)
        await self.send_state(state, client_seq=None)
        self.start_watch(state.deadline)

    async def disconnect(self, code: int) -> None:
        await self.leave()

    async def leave(self) -> None:
        await self.presence_leave()
        if self.watch is not None and self.watch is not asyncio.current_task():
            self.watch.cancel()
        for group in getattr(self, "joined", ()):
            await self.channel_layer.group_discard(group, self.channel_name)
        self.joined = []

    async def end(self, code: int) -> None:
        """Close for good: nothing is forwarded or answered from here on, even before the close lands."""
        if self.ended:
            return
        self.ended = True
        await self.leave()
        await self.close(code=code)

    @classmethod
    async def decode_json(cls, text_data: str) -> Any:
        # orjson refuses deep nesting without recursing; anything undecodable is answered as unknown.
        try:
            return orjson.loads(text_data)
        except orjson.JSONDecodeError:
            return None

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if self.ended:
            return
        if isinstance(content, dict) and content.get("type") == "presence":
            await self.presence_receive(content)
            return
        if not isinstance(content, dict) or content.get("type") != "sync":
            await self.send_json(
                {
                    "type": "error",
                    "error": 'Only {"type": "sync", "seq": n} and {"type": "presence", "node": id} are '
                    "understood.",
                }
            )
            return
        seq = content.get("seq")
        client_seq = seq if isinstance(seq, int) and not isinstance(seq, bool) else None
        # Access is re-checked on every sync as well as on every announcement.
        state = await self.recheck()
        if state is not None:
            await self.send_state(state, client_seq=client_seq)

    async def current_state(self) -> SessionState | None:
        """Return the viewer's state, or close the socket with the refusal's code and return None."""
        try:
            return await database_sync_to_async(read_state)(
                self.credentials, self.session_pk, self.link_token
            )
        except access.AccessDenied as exc:
            await self.end(close_code(exc))
            return None

    async def recheck(self) -> SessionState | None:
        """Re-read credentials and access; close the socket when they are gone or no longer let it
        write as it did, else adopt the (maybe changed) grant and expiry."""
        if self.ended:
            return None
        state = await self.current_state()
        if state is None or self.ended:
            return None
        if self.can_write and not state.can_write:
            await self.end(CLOSE_ACCESS_CHANGED)
            return None
        self.grant, self.can_write = state.grant, state.can_write
        if state.deadline != self.deadline:
            # A token or link given another expiry: watch for that one instead.
            self.start_watch(state.deadline)
        return state

    def start_watch(self, deadline: datetime | None) -> None:
        if self.watch is not None and self.watch is not asyncio.current_task():
            self.watch.cancel()
        self.deadline = deadline
        self.watch = asyncio.create_task(self.watch_access(deadline))

    async def watch_access(self, deadline: datetime | None) -> None:
        """Re-check when the access lapses by itself (an expiry) and every ``RECHECK_SECONDS``."""
        with contextlib.suppress(asyncio.CancelledError):
            while True:
                wait = RECHECK_SECONDS
                if deadline is not None:
                    wait = min(wait, max(0.0, (deadline - timezone.now()).total_seconds()) + 0.05)
                await asyncio.sleep(wait)
                state = await self.recheck()
                if state is None or self.watch is not asyncio.current_task():
                    return  # closed, or a newer watch took over
                deadline = state.deadline

    async def access_changed(self, message: dict[str, Any]) -> None:
        """Something about this socket's user changed: close if its own credential ended, else re-check."""
        if self.ended:
            return
        if message.get("ended") in self.credentials.tags():
            if not self.link_token:
                await self.end(CLOSE_UNAUTHENTICATED)
                return
            self.credentials = Credentials()  # signed out: what is left is the link, checked next
        await self.recheck()

    async def inbox_changed(self, message: dict[str, Any]) -> None:
        """Pass the user's new unread count to the page (its header shows it)."""
        if not self.ended:
            await self.send_json({"type": "inbox", "unread": message.get("unread")})

    async def send_state(self, state: SessionState, *, client_seq: int | None) -> None:
        behind = state.last_seq is not None and (client_seq is None or client_seq < state.last_seq)
        await self.send_json(
            {
                "type": "state",
                "session": self.session_pk,
                "seq": state.last_seq,
                "leafId": state.leaf_id,
                "behind": behind if client_seq is not None else None,
            }
        )

    async def session_event(self, message: dict[str, Any]) -> None:
        """Forward a group event as ``{"type": "event", "event": name, ...}``, as the grant allows."""
        if self.ended:
            return
        if message.get("event") in ACCESS_EVENTS:
            await self.recheck()
            return
        body = link_scope.live_event(self.grant, message)
        if body is not None:
            await self.send_json({"type": "event", **body})
        if message.get("event") == "session_deleted":
            await self.recheck()  # the session is gone: its sockets close once they have said so


class NotFoundConsumer(AsyncWebsocketConsumer):
    """Refuse a socket whose path names no live view (for example a session id that is not a number)."""

    async def connect(self) -> None:
        await self.close(code=CLOSE_NOT_FOUND)
