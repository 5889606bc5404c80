"""Sessions and their append-only entries, with the path facts fixed at append time."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import OuterRef, Subquery
from django.db.models.functions import Left
from django.utils import timezone
from knox.models import AbstractAuthToken

from documents.titles import TITLE_CHARS, title_of
from pitree.attribution import Author
from pitree.entries import Entry as DomainEntry
from pitree.entries import entry_from_value
from pitree.jsjson import parse_json
from sessions_app.fast_get import ByPk
from teams.models import WRITER_ROLES


class ChatSessionQuerySet(models.QuerySet["ChatSession"]):
    """The one place that says who may see and change a session (share links are checked in ``access``),
    with ``LiveSessionManager.grant_for``, the same rule for one session.

    Its owner may read and change it; a member of a team it is shared with may read it, and change it
    when the share is an editor share and the member is not a team viewer.
    """

    def visible_to(self, user: Any) -> ChatSessionQuerySet:
        """Return the sessions ``user`` may read: their own and those shared with a team they belong to."""
        if not getattr(user, "is_authenticated", False):
            return self.none()
        shared = SessionShare.objects.filter(team__memberships__user=user).values("session_id")
        return self.filter(models.Q(owner=user) | models.Q(pk__in=shared))

    def editable_by(self, user: Any) -> ChatSessionQuerySet:
        """Return the sessions ``user`` may change: their own, and editor shares unless a team viewer."""
        if not getattr(user, "is_authenticated", False):
            return self.none()
        shared = SessionShare.objects.filter(
            access=SessionShare.Access.EDITOR,
            team__memberships__user=user,
            team__memberships__role__in=WRITER_ROLES,
        ).values("session_id")
        return self.filter(models.Q(owner=user) | models.Q(pk__in=shared))


class LiveSessionManager(models.Manager.from_queryset(ChatSessionQuerySet)):  # type: ignore[misc]  # the plugin types from_queryset only at module level
    """Every query of ``ChatSession.objects`` leaves out deleted sessions, whose rows are still being purged.

    Deleting a session hides it in one short transaction and a background task deletes its rows later
    (``services.purging``), so lists, access checks, search, sync and the admin treat it as gone at once.
    Related-object access (``entry.session``) goes through the plain base manager and still finds it.
    """

    def get_queryset(self) -> ChatSessionQuerySet:
        return super().get_queryset().filter(deleted_at__isnull=True)

    def grant_for(self, user: Any, pk: int) -> tuple[ChatSession, bool] | None:
        """Return one session ``user`` may read and whether they may change it, or None.

        The same rule as ``visible_to`` and ``editable_by``, in the cheapest queries for the hottest
        check: one by primary key for the owner, and one more over the user's shares of this session
        for anyone else.
        """
        if not getattr(user, "is_authenticated", False):
            return None
        session = _live_session_by_pk.get(pk, using=self.db)
        if session is None:
            return None
        if session.owner_id == user.pk:
            session.owner = user  # the caller is the owner: no join, no second query
            return session, True
        shares = SessionShare.objects.filter(session_id=pk, team__memberships__user=user).values_list(
            "access", "team__memberships__role"
        )
        found = list(shares)
        if not found:
            return None
        writable = any(a == SessionShare.Access.EDITOR and role in WRITER_ROLES for a, role in found)
        return session, writable


class ChatSession(models.Model):
    """A Pi session: its header, its persisted leaf and counters for the list view."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_sessions"
    )
    pi_id = models.TextField(help_text="The id in the Pi session header")
    header_raw = models.TextField(help_text="The header line as imported or written, for byte-exact export")
    version = models.IntegerField(default=3)
    cwd = models.TextField(blank=True, default="")
    pi_timestamp = models.TextField(blank=True, default="")
    parent_session = models.TextField(blank=True, null=True)
    name = models.TextField(blank=True, default="")
    leaf_entry_id = models.TextField(null=True, blank=True)
    leaf_seq = models.IntegerField(null=True, blank=True)
    next_seq = models.IntegerField(default=0)
    next_segment = models.IntegerField(default=0)
    entry_count = models.IntegerField(default=0)
    message_count = models.IntegerField(default=0)
    # Bytes (UTF-8) of the stored lines, kept by the entry store: the owner's quota sums these rows.
    stored_bytes = models.BigIntegerField(default=0, db_default=0)
    # Bumped when stored lines or what was derived from them are rewritten in place (a secret redacted,
    # costs recounted): caches and ETags keyed by state include it.
    revision = models.IntegerField(default=0, db_default=0)
    source_filename = models.TextField(blank=True, default="")
    compaction_settings = models.JSONField(
        null=True,
        blank=True,
        help_text="This session's own compaction settings: enabled, reserveTokens, keepRecentTokens",
    )
    sync_cursor = models.JSONField(
        null=True, blank=True, help_text="How much of the local file live sync holds: lines, bytes, lastId"
    )
    forked_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="forks"
    )
    forked_from_entry = models.TextField(null=True, blank=True)
    forked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # A fork or clone stores its copies first, as seqs 0..n-1: what they used was counted in the source,
    # so usage and cost totals per user and team leave them out (the session's own page does not).
    copied_entries = models.IntegerField(
        default=0,
        db_default=0,
        help_text="Entries before this sequence were copied from the session it was forked or cloned from",
    )
    # Kept at write time from ``ChangedFile`` (sessions_app/changed_files.py); None until counted (a
    # session stored before the count existed, until ``manage.py reconcile`` counts it).
    files_changed = models.IntegerField(
        null=True,
        blank=True,
        help_text="Files Pi's edit and write tools changed in this session, on all its branches",
    )
    # Every entry up to this seq has its ``FileStep`` rows (sessions_app/file_steps.py). A new session
    # starts at -1; None (a session the previous release created) or a gap (its appends) leaves the
    # files view walking the branch until ``manage.py reconcile`` writes the steps.
    file_steps_through = models.IntegerField(
        null=True, blank=True, default=-1, help_text="Entries up to this seq have their file steps kept"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    deleted_at = models.DateTimeField(
        null=True, blank=True, help_text="Deleted by its owner: hidden everywhere until its rows are purged"
    )

    objects = LiveSessionManager()
    # Deleted sessions too: only for purging them (sessions_app/services/purging.py).
    with_deleted = ChatSessionQuerySet.as_manager()

    class Meta:
        constraints = [
            # A deleted session awaiting its purge does not block importing the same file again.
            models.UniqueConstraint(
                fields=["owner", "pi_id"],
                condition=models.Q(deleted_at__isnull=True),
                name="unique_pi_session_per_owner",
            )
        ]
        indexes = [
            models.Index(fields=["owner", "-updated_at"]),
            models.Index(
                fields=["deleted_at"],
                condition=models.Q(deleted_at__isnull=False),
                name="session_deleted_idx",
            ),
        ]

    def __str__(self) -> str:
        # Never a query: logs and admin rows name sessions by the thousand. ``title`` reads the prompt.
        prompt = self.__dict__.get("first_prompt")
        return title_of(self.name, prompt or "", self.pi_id)

    @property
    def title(self) -> str:
        """The name, else the first prompt (one indexed read, kept on the instance), else the Pi id."""
        if self.name.strip():
            return self.name
        prompt = self.__dict__.get("first_prompt")
        if prompt is None and self.pk is not None:
            prompt = _prompts(self.pk).values_list("prompt", flat=True).first()
            self.__dict__["first_prompt"] = prompt or ""
        return title_of(self.name, prompt or "", self.pi_id)


# Enough of a prompt to make a title of, however long the prompt (whitespace is folded after).
PROMPT_CHARS = TITLE_CHARS * 4
# The prompt is looked for among the first entries only: a session of tool output alone costs no more.
PROMPT_WITHIN = 200


def first_prompt(session: str = "pk") -> Subquery:
    """Annotate a list of sessions (``session`` names the session's id) with their first prompt, so their
    titles need no query each."""
    return Subquery(_prompts(OuterRef(session)).values("prompt")[:1])


def _prompts(session: Any) -> Any:
    """The session's user messages with text among its first entries, oldest first, each as ``prompt``."""
    return (
        Entry.objects.filter(session_id=session, seq__lt=PROMPT_WITHIN, type="message", role="user")
        .exclude(search_text="")
        .order_by("seq")
        .annotate(prompt=Left("search_text", PROMPT_CHARS))
    )


# The access check's read of one live session, compiled once (see ``fast_get``).
_live_session_by_pk: ByPk[ChatSession] = ByPk(ChatSession, lambda: ChatSession.objects.all())


class Entry(models.Model):
    """One appended line. ``raw`` is the verbatim JSON; the other columns are extracted or folded facts."""

    # No index of its own: every index below starts with the session, and a bare one misleads the planner.
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="entries", db_index=False)
    seq = models.IntegerField(help_text="Append order within the session, gapless from 0")
    entry_id = models.TextField(null=True, blank=True, help_text="Pi id; null for lines outside the tree")
    parent_id = models.TextField(null=True, blank=True)
    type = models.TextField(blank=True, default="")
    role = models.TextField(blank=True, default="")
    timestamp = models.TextField(blank=True, default="")
    raw = models.TextField()
    parent_seq = models.IntegerField(null=True, blank=True, help_text="Resolved parent; null for a root")
    depth = models.IntegerField(null=True, blank=True)
    segment = models.IntegerField(null=True, blank=True)
    compaction_seq = models.IntegerField(null=True, blank=True, help_text="Latest compaction on the path")
    model_seq = models.IntegerField(null=True, blank=True, help_text="Latest model change on the path")
    thinking_seq = models.IntegerField(null=True, blank=True, help_text="Latest thinking change on the path")
    # What a search matches: the message text (domain/search.py). On PostgreSQL a trigger copies each
    # searchable entry's position and text-search vector into EntrySearch (migration 0016).
    search_text = models.TextField(blank=True, default="")
    # Who wrote it (``EntryAuthor``); null only for rows stored before authors were recorded.
    author = models.ForeignKey(
        "EntryAuthor", null=True, blank=True, on_delete=models.PROTECT, related_name="+", db_index=False
    )

    class Meta:
        verbose_name_plural = "entries"
        constraints = [models.UniqueConstraint(fields=["session", "seq"], name="unique_entry_seq")]
        indexes = [
            models.Index(fields=["session", "entry_id"], name="entry_session_id_idx"),
            # Covers path reads: a path's ids come from an index-only scan, one range per segment.
            models.Index(
                fields=["session", "segment", "depth"], include=["seq"], name="entry_segment_depth_idx"
            ),
            models.Index(fields=["session", "parent_seq"], name="entry_parent_idx"),
            # Labels, edits, compactions and summaries are few; the overview and audits find them by type.
            models.Index(fields=["session", "type"], name="entry_type_idx"),
            # The session list's author filter: does this session hold entries by these authors.
            models.Index(fields=["session", "author"], name="entry_author_idx"),
            # System messages are few; the context's system prompt replays those on a path.
            models.Index(
                fields=["session", "segment", "depth"],
                condition=models.Q(role="system"),
                name="entry_system_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.entry_id or '-'} ({self.type})"

    def payload(self) -> Any:
        return parse_json(self.raw)

    def to_domain(self) -> DomainEntry:
        """Return the domain entry; ``seq`` keeps the append order."""
        return entry_from_value(self.seq, self.payload())


class EntrySums(models.Model):
    """Running sums of Pi's token estimates along an entry's path (``domain/context_sums.py``).

    Written by the entry store with the entry itself; the context panel reads a few of these rows
    instead of projecting the whole path. An entry without a row (stored before the sums existed and
    not yet backfilled) makes the reader project in full.
    """

    pk = models.CompositePrimaryKey("session", "seq")
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="+", db_index=False)
    seq = models.IntegerField()
    tokens = models.BigIntegerField(help_text="Estimates of the path's non-system messages")
    all_tokens = models.BigIntegerField(help_text="Estimates of all the path's messages")
    messages = models.IntegerField(help_text="Messages on the path (compactions count none)")
    usage_seq = models.IntegerField(null=True, blank=True, help_text="Newest assistant with trusted usage")

    class Meta:
        verbose_name_plural = "entry sums"

    def __str__(self) -> str:
        return f"{self.session_id}:{self.seq}"


class EntrySearch(models.Model):
    """Where each searchable entry sits, beside its text-search vector (PostgreSQL only).

    Filled by a database trigger on every insert into the entry table, whatever the write path (COPY,
    bulk insert, fork), and never written from Python: entries are append-only. Kept apart from the
    entry rows, whose verbatim lines make them wide and push their vectors out of line, so a search
    reads narrow rows: counting or listing every hit of a session touches a few pages, not the whole
    session. The ``vector`` column (tsvector) is not a Django field; its GIN index starts with the
    session (btree_gin), so a search in one session reads only that session's postings.
    """

    pk = models.CompositePrimaryKey("session", "seq")
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="+", db_index=False)
    seq = models.IntegerField()
    segment = models.IntegerField(null=True, blank=True)
    depth = models.IntegerField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "entry search rows"

    def __str__(self) -> str:
        return f"{self.session_id}:{self.seq}"


class ToolUse(models.Model):
    """One tool call of a session, indexed as it is stored so "sessions that touched this path" is a lookup.

    Written by the entry store in the transaction of the entries (``services.tool_index``): a call's
    row when its assistant entry is stored, completed (``result_seq``) when its result is; a ``!command``
    the user ran is a ``bash`` row of its own entry. What counts as a touch is ``pitree.tool_uses``'s.
    """

    id = models.BigAutoField(primary_key=True)
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="+", db_index=False)
    call_seq = models.IntegerField(help_text="The entry that asked for the call")
    call_id = models.TextField(blank=True, default="", help_text="Pi's toolCallId; empty for a user command")
    tool = models.TextField()
    path = models.TextField(blank=True, default="", help_text="As the Files panel shows it; read/edit/write")
    absolute = models.TextField(blank=True, default="")
    command = models.TextField(blank=True, default="", help_text="A bash command (its start)")
    result_seq = models.IntegerField(null=True, blank=True, help_text="The result's entry; null until stored")
    result_entry_id = models.TextField(null=True, blank=True)
    failed = models.BooleanField(default=False, help_text="The result says the tool failed")

    class Meta:
        constraints = [
            # A call is indexed once, whichever write path met it first (a retried append adds nothing);
            # it also serves reading a session's rows by range.
            models.UniqueConstraint(fields=["session", "call_seq", "call_id"], name="unique_tool_use_call")
        ]
        indexes = [
            # Results find their call.
            models.Index(fields=["session", "call_id"], name="tool_use_call_idx"),
            # Exact paths and folder prefixes across sessions (text_pattern_ops serves LIKE 'a/%').
            models.Index(fields=["path"], opclasses=["text_pattern_ops"], name="tool_use_path_idx"),
            models.Index(fields=["absolute"], opclasses=["text_pattern_ops"], name="tool_use_absolute_idx"),
            models.Index(fields=["tool", "session"], name="tool_use_tool_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.tool} {self.path or self.command[:40]} ({self.session_id}:{self.call_seq})"


class Segment(models.Model):
    """A run of entries, each the first child of the one before; a path is read segment by segment."""

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="segments")
    index = models.IntegerField()
    parent_index = models.IntegerField(null=True, blank=True)
    start_depth = models.IntegerField()
    # Seqs grow along a path, so when tip_seq - first_seq == tip_depth - start_depth the segment's entries
    # are consecutive in append order and its path ids are a plain range, read without touching entries.
    first_seq = models.IntegerField(null=True, blank=True)
    tip_seq = models.IntegerField()
    tip_depth = models.IntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "index"], name="unique_segment_index")]

    def __str__(self) -> str:
        return f"segment {self.index} of {self.session_id}"


class ChangedFile(models.Model):
    """A file Pi's edit or write tool changed somewhere in a session (on any branch): one row per path,
    written with the entries, so the session list counts a session's files without reading them."""

    pk = models.CompositePrimaryKey("session", "digest")
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="+", db_index=False)
    # Paths can be longer than an index entry may be: the key is their hash.
    digest = models.CharField(max_length=64, help_text="SHA-256 of the path, in hex")
    path = models.TextField(help_text="Absolute and normalized, as the files view shows it")

    def __str__(self) -> str:
        return f"{self.session_id}:{self.path}"


class FileStep(models.Model):
    """What one entry did to one file, or the shell command it ran, on the path root → that entry
    (``pitree.files.Step``): kept as the entry is stored, so the files of any node are a sum over the
    steps on its path, without reading a line. ``prev_seq`` is the same file's step above it on its
    path, so the file's text at a step is rebuilt from the lines of a few steps, not the branch's."""

    pk = models.CompositePrimaryKey("session", "seq")
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="+", db_index=False)
    seq = models.IntegerField(help_text="The tool result's entry, or the user's command")
    segment = models.IntegerField()
    depth = models.IntegerField()
    entry_id = models.TextField()
    call_seq = models.IntegerField(null=True, blank=True, help_text="The assistant entry that asked for it")
    call_entry_id = models.TextField(null=True, blank=True)
    kind = models.CharField(max_length=10)
    absolute = models.TextField(blank=True, default="", help_text="The file; empty for a command")
    # Paths can be longer than an index entry may be: the file's index holds a hash (collisions only
    # cost a longer scan: readers compare ``absolute`` too).
    file_hash = models.BigIntegerField(default=0, help_text="The first 8 bytes of the path's SHA-256")
    path = models.TextField(blank=True, default="", help_text="As the files view shows it")
    added = models.IntegerField(default=0)
    removed = models.IntegerField(default=0)
    known = models.BooleanField(default=False, help_text="The file's text is known after this step")
    resets = models.BooleanField(default=False, help_text="Its text became known or unknown here")
    prev_seq = models.IntegerField(null=True, blank=True, help_text="The file's step above, on this path")
    failed = models.BooleanField(default=False)
    by_user = models.BooleanField(default=False)
    command = models.TextField(blank=True, default="")
    commands = models.IntegerField(default=0, help_text="Shell commands on the path up to this step")
    # The file's totals on the path down to this step, so a node's files are their last steps' rows.
    kinds = models.IntegerField(
        default=0, help_text="Kinds of touch so far: created 1, written 2, edited 4, read 8"
    )
    added_sum = models.IntegerField(default=0)
    removed_sum = models.IntegerField(default=0)
    change_count = models.IntegerField(default=0)
    read_count = models.IntegerField(default=0)
    known_commands = models.IntegerField(
        default=0, help_text="The path's commands when the file's text was last made known or unknown"
    )

    class Meta:
        indexes = [
            # A path's steps, read range by range as its entries are.
            models.Index(fields=["session", "segment", "depth"], name="file_step_path_idx"),
            # A file's earlier steps, when a new one is written.
            models.Index(fields=["session", "file_hash", "seq"], name="file_step_file_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.path or self.command[:40]} ({self.session_id}:{self.seq})"


class SessionShare(models.Model):
    """A session shared with a team; team viewers read even an editor share."""

    class Access(models.TextChoices):
        VIEWER = "viewer"
        EDITOR = "editor"

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="shares")
    team = models.ForeignKey("teams.Team", on_delete=models.CASCADE, related_name="shares")
    access = models.CharField(max_length=10, choices=Access.choices, default=Access.VIEWER)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "team"], name="unique_session_team_share")]

    def __str__(self) -> str:
        return f"{self.session} → {self.team} ({self.access})"


class ShareLink(models.Model):
    """A read-only link to the whole tree or one path, live or frozen, revocable, optionally expiring.

    Only the token's hash is stored (``link_tokens``): the token itself is shown once, in the answer to
    the request that created the link (``raw_token`` of the instance ``create_share_link`` returns).
    """

    class Scope(models.TextChoices):
        TREE = "tree"
        PATH = "path"

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="links")
    token_hash = models.CharField(
        max_length=64, unique=True, editable=False, help_text="SHA-256 of the token"
    )
    token_prefix = models.CharField(
        max_length=8, blank=True, default="", editable=False, help_text="The token's first characters"
    )
    scope = models.CharField(max_length=8, choices=Scope.choices, default=Scope.TREE)
    entry_id = models.TextField(null=True, blank=True, help_text="Path scope: the path root → this entry")
    frozen_seq = models.IntegerField(null=True, blank=True, help_text="Frozen: only entries up to this seq")
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    # Set on the instance that created the link only, never stored nor read back.
    raw_token: str | None = None

    def state(self, now: datetime | None = None) -> str:
        """Return "revoked", "expired" or "active" (revocation wins: it was a decision)."""
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= (now or timezone.now()):
            return "expired"
        return "active"

    def __str__(self) -> str:
        return f"link to {self.session} ({self.scope})"


class ApiToken(AbstractAuthToken):
    """An API token for one device or script: only its hash is stored, it expires, and it is revoked alone.

    The token text itself is shown once, when it is created (``POST /api/token/`` or
    ``manage.py create_api_token``). ``token_key`` (its first 15 characters, which knox looks tokens up
    by) stays in the table; lists, logs and authors name a token by ``public_id``, a shorter prefix.
    """

    ID_CHARS = 8
    """Hex characters of a token that name it in lists: 32 of its 256 bits, distinct among a user's tokens."""

    name = models.CharField(
        max_length=100, blank=True, default="", help_text="The device or script it is for"
    )

    class Meta:
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name or 'token'} {self.public_id}… of {self.user}"

    @property
    def public_id(self) -> str:
        """The token's name in lists and URLs: too short to help anyone guess the rest."""
        return self.token_key[: self.ID_CHARS]


class EntryAuthor(models.Model):
    """Who wrote entries (``domain.attribution.Author``): one row per distinct author, shared by its entries.

    Rows are written once and never changed; a deleted user's rows keep the username.
    """

    key = models.CharField(max_length=64, unique=True, help_text="Digest of the author's fields")
    kind = models.CharField(max_length=10)
    name = models.TextField(blank=True, default="")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    via = models.TextField(blank=True, default="")
    imported = models.BooleanField(default=False)

    def __str__(self) -> str:
        return self.to_domain().label()

    def to_domain(self) -> Author:
        return Author(
            kind=self.kind, name=self.name, user_id=self.user_id, via=self.via, imported=self.imported
        )
