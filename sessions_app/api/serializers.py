"""Input validation and output shapes. Serializers only convert data; services do the writing."""

from __future__ import annotations

import json
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.api.fields import Flag, Text
from pitree.attribution import KINDS
from pitree.jsjson import js_stringify, parse_json
from pitree.jsonl import SkipReport
from pitree.messages import convert_to_llm
from pitree.operations import FORK_MODES
from pitree.storable import MAX_ID_CHARS
from pitree.tokens import SetAsideUsage, estimate_tokens, set_aside_usage
from providers.facade import context_breakdown, context_breakdown_from_sums
from sessions_app.attribution import as_json
from sessions_app.context_reads import ContextPage
from sessions_app.models import ChatSession, Entry, EntryAuthor
from sessions_app.queries import ContextView

MAX_ENTRY_IDS = 100  # entries one request may name (a screenful of tree rows, and then some)

# -- output ---------------------------------------------------------------------------------------------


class SessionSerializer(serializers.ModelSerializer[ChatSession]):
    piId = serializers.CharField(source="pi_id")
    header = serializers.SerializerMethodField()
    timestamp = serializers.CharField(source="pi_timestamp")
    parentSession = serializers.CharField(source="parent_session", allow_null=True)
    leafId = serializers.CharField(source="leaf_entry_id", allow_null=True)
    leafSeq = serializers.IntegerField(source="leaf_seq", allow_null=True)
    lastSeq = serializers.SerializerMethodField()
    entryCount = serializers.IntegerField(source="entry_count")
    messageCount = serializers.IntegerField(source="message_count")
    filesChanged = serializers.IntegerField(
        source="files_changed",
        allow_null=True,
        help_text="Files Pi's edit and write tools changed, on all branches (null: not counted yet, or "
        "not told to a link that sees part of the session)",
    )
    owner = serializers.CharField(source="owner.get_username")
    forkedFrom = serializers.PrimaryKeyRelatedField[ChatSession](source="forked_from", read_only=True)
    forkedFromEntry = serializers.CharField(source="forked_from_entry", allow_null=True)
    forkedBy = serializers.SerializerMethodField()
    sourceFilename = serializers.CharField(source="source_filename")
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")

    class Meta:
        model = ChatSession
        fields = [
            "id",
            "piId",
            "name",
            "cwd",
            "version",
            "timestamp",
            "parentSession",
            "header",
            "leafId",
            "leafSeq",
            "lastSeq",
            "entryCount",
            "messageCount",
            "filesChanged",
            "owner",
            "forkedFrom",
            "forkedFromEntry",
            "forkedBy",
            "sourceFilename",
            "createdAt",
            "updatedAt",
        ]
        read_only_fields = fields

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_header(self, obj: ChatSession) -> Any:
        return parse_json(obj.header_raw)

    def get_lastSeq(self, obj: ChatSession) -> int | None:
        return obj.next_seq - 1 if obj.next_seq else None

    def get_forkedBy(self, obj: ChatSession) -> str | None:
        return obj.forked_by.get_username() if obj.forked_by is not None else None


class SessionListItemSerializer(SessionSerializer):
    """A session as lists show it: with the title people know it by (the list's query reads the prompt)."""

    title = serializers.CharField(
        read_only=True, help_text="The name; without one the first prompt, as Pi's session picker shows it"
    )

    class Meta(SessionSerializer.Meta):
        fields = [*SessionSerializer.Meta.fields, "title"]


_DATETIME = serializers.DateTimeField()


def session_body(obj: ChatSession) -> dict[str, Any]:
    """Return what ``SessionSerializer(obj).data`` holds, without building a serializer per request.

    The session read is the API's hottest route; a model serializer rebuilds its fields each time.
    """
    return {
        "id": obj.pk,
        "piId": obj.pi_id,
        "name": obj.name,
        "cwd": obj.cwd,
        "version": obj.version,
        "timestamp": obj.pi_timestamp,
        "parentSession": obj.parent_session,
        "header": parse_json(obj.header_raw),
        "leafId": obj.leaf_entry_id,
        "leafSeq": obj.leaf_seq,
        "lastSeq": obj.next_seq - 1 if obj.next_seq else None,
        "entryCount": obj.entry_count,
        "messageCount": obj.message_count,
        "filesChanged": obj.files_changed,
        "owner": obj.owner.get_username(),
        "forkedFrom": obj.forked_from_id,
        "forkedFromEntry": obj.forked_from_entry,
        "forkedBy": obj.forked_by.get_username() if obj.forked_by is not None else None,
        "sourceFilename": obj.source_filename,
        "createdAt": _DATETIME.to_representation(obj.created_at),
        "updatedAt": _DATETIME.to_representation(obj.updated_at),
    }


class AuthorSerializer(serializers.Serializer[Any]):
    kind = serializers.ChoiceField(choices=KINDS)
    name = serializers.CharField(help_text="The username (empty for a link visitor)")
    userId = serializers.IntegerField(allow_null=True)
    via = serializers.CharField(help_text="The sync device (API token name) or the run's id")
    imported = serializers.BooleanField()
    label = serializers.CharField(help_text="How the entry card names the author")  # type: ignore[assignment]  # a field named label


class EntrySerializer(serializers.Serializer[Entry]):
    seq = serializers.IntegerField()
    id = serializers.CharField(source="entry_id", allow_null=True)
    parentId = serializers.CharField(source="parent_id", allow_null=True)
    type = serializers.CharField()
    timestamp = serializers.CharField()
    entry = serializers.SerializerMethodField(help_text="The entry exactly as stored (verbatim Pi JSON)")
    author = serializers.SerializerMethodField(
        help_text="Who wrote the entry through piweb: kind (user, device, link, run, system), name, userId, "
        "via (the device or run), imported, label; null for entries stored before authors were recorded"
    )

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_entry(self, obj: Entry) -> Any:
        return obj.payload()

    @extend_schema_field(AuthorSerializer(allow_null=True))
    def get_author(self, obj: Entry) -> dict[str, Any] | None:
        # A page's entries share a few authors: each is read once per answer.
        cache: dict[int, dict[str, Any] | None] = self.root.__dict__.setdefault("_authors", {})
        if obj.author_id is None:
            return None
        if obj.author_id not in cache:
            cache[obj.author_id] = as_json(EntryAuthor.objects.filter(pk=obj.author_id).first())
        return cache[obj.author_id]


class EntryPageSerializer(serializers.Serializer[Any]):
    entries = EntrySerializer(many=True)
    leafId = serializers.CharField(allow_null=True)
    lastSeq = serializers.IntegerField(allow_null=True)
    hasMore = serializers.BooleanField()


class SkippedLineSerializer(serializers.Serializer[Any]):
    line = serializers.IntegerField()
    reason = serializers.CharField()


class ImportResultSerializer(serializers.Serializer[Any]):
    session = SessionListItemSerializer()
    created = serializers.BooleanField()
    appended = serializers.IntegerField()
    serverOnly = serializers.IntegerField(
        help_text="Entries of the stored session this file does not have (it grew in piweb since)"
    )
    skippedLines = SkippedLineSerializer(many=True, help_text="The first skipped lines, by line number")
    skippedCount = serializers.IntegerField(help_text="All skipped lines, listed or not")
    migrated = serializers.BooleanField()


def skipped_payload(report: SkipReport) -> dict[str, Any]:
    """The skip report as answers give it: the first lines with their reasons, and how many in all."""
    return {
        "skippedLines": [{"line": s.line_no, "reason": s.reason} for s in report.lines],
        "skippedCount": report.total,
    }


class ForkResultSerializer(serializers.Serializer[Any]):
    session = SessionSerializer()
    editorText = serializers.CharField(required=False)


class NavigateResultSerializer(serializers.Serializer[Any]):
    leafId = serializers.CharField(allow_null=True)
    editorText = serializers.CharField(required=False)


class OperationSerializer(serializers.Serializer[Any]):
    operationId = serializers.CharField()


class ErrorSerializer(serializers.Serializer[Any]):
    error = serializers.CharField()
    detail = serializers.JSONField(required=False)


# -- input ----------------------------------------------------------------------------------------------


class SessionFilterSerializer(serializers.Serializer[Any]):
    name = Text(required=False, help_text="Part of the name, any case")
    cwd = Text(required=False)
    createdAfter = serializers.DateTimeField(required=False)
    createdBefore = serializers.DateTimeField(required=False)
    updatedAfter = serializers.DateTimeField(required=False)
    updatedBefore = serializers.DateTimeField(required=False)


class SessionCreateSerializer(serializers.Serializer[Any]):
    cwd = Text(required=False, allow_blank=True, default="")
    name = Text(required=False, allow_blank=True, allow_null=True, default=None)


class SessionRenameSerializer(serializers.Serializer[Any]):
    name = Text(allow_blank=True, trim_whitespace=False)


class EntriesQuerySerializer(serializers.Serializer[Any]):
    since = Text(required=False, help_text="Return entries strictly after this entry id")
    limit = serializers.IntegerField(required=False, min_value=1, max_value=5000, default=1000)
    id = serializers.ListField(
        child=Text(),
        required=False,
        min_length=1,
        max_length=MAX_ENTRY_IDS,
        help_text=(
            f"Return only these entries (repeat the parameter, at most {MAX_ENTRY_IDS}), in append order; "
            "ids not found are left out. Not with `since`."
        ),
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "id" in attrs and "since" in attrs:
            raise serializers.ValidationError("Give either id or since, not both.")
        return attrs


class TreeQuerySerializer(serializers.Serializer[Any]):
    around = Text(required=False, help_text="Expand the entries near this entry")
    segment = serializers.IntegerField(required=False, min_value=0, help_text="Expand this run's segment")


class ContextQuerySerializer(serializers.Serializer[Any]):
    leaf = Text(required=False, help_text="Project the path to this entry (default: leaf)")
    window = serializers.IntegerField(required=False, min_value=1, help_text="Context window in tokens")
    head = serializers.IntegerField(
        required=False, min_value=0, help_text="With tail: also the first N messages"
    )
    tail = serializers.IntegerField(
        required=False, min_value=0, help_text="Return only the newest N messages (the estimate covers all)"
    )
    before = serializers.IntegerField(
        required=False,
        min_value=0,
        help_text="With tail: the N messages end before this index (to page towards the head)",
    )
    beforeDepth = serializers.IntegerField(
        required=False,
        min_value=0,
        help_text="With tail: the N messages end above this path depth (a message's `depth`; pages "
        "towards the head)",
    )
    llm = Flag(required=False, default=True, help_text="Include the LLM-form messages")
    render = serializers.IntegerField(
        required=False,
        default=0,
        min_value=0,
        help_text="Add the sanitized HTML (`rendered`) of the newest N shaped messages",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "before" in attrs and "tail" not in attrs:
            raise serializers.ValidationError({"before": ["Only with tail."]})
        if "beforeDepth" in attrs and "tail" not in attrs:
            raise serializers.ValidationError({"beforeDepth": ["Only with tail."]})
        if "beforeDepth" in attrs and "before" in attrs:
            raise serializers.ValidationError({"beforeDepth": ["Give before or beforeDepth, not both."]})
        return attrs


class PathQuerySerializer(serializers.Serializer[Any]):
    leaf = Text(required=False, help_text="The path to this entry (default: the leaf)")
    limit = serializers.IntegerField(required=False, default=200, min_value=1, max_value=2000)
    beforeDepth = serializers.IntegerField(
        required=False, min_value=0, help_text="Only entries above this depth (to page towards the root)"
    )
    render = Flag(required=False, default=False, help_text="Add each entry's sanitized HTML as `rendered`")


class FilesQuerySerializer(serializers.Serializer[Any]):
    leaf = Text(required=False, help_text="The branch ends at this entry (default: the leaf)")
    path = Text(
        required=False,
        help_text="One file (as listed, or absolute): its changes as diff hunks and its content when known",
    )
    against = Text(
        required=False,
        help_text="Compare by work with the branch ending at this entry: the files each side changed after "
        "they parted (`onlyLeft`, `onlyRight`, `both`), with each side's diffs",
    )
    limit = serializers.IntegerField(
        required=False,
        default=200,
        min_value=1,
        max_value=5000,
        help_text="List this many files, the most recently touched first (`fileCount` counts all)",
    )


class PathPageSerializer(serializers.Serializer[Any]):
    entries = EntrySerializer(many=True)
    leafId = serializers.CharField(allow_null=True)
    firstDepth = serializers.IntegerField(allow_null=True)
    hasMore = serializers.BooleanField()


class NavigateSerializer(serializers.Serializer[Any]):
    targetId = Text(max_length=MAX_ID_CHARS)
    summarize = Flag(required=False, default=False)
    customInstructions = Text(required=False, allow_blank=True)
    replaceInstructions = Flag(required=False, default=False)


class ForkSerializer(serializers.Serializer[Any]):
    entryId = Text(max_length=MAX_ID_CHARS)
    position = serializers.ChoiceField(choices=["before", "at"], required=False)
    mode = serializers.ChoiceField(choices=list(FORK_MODES), required=False, default="path")


class CloneSerializer(serializers.Serializer[Any]):
    entryId = Text(required=False, max_length=MAX_ID_CHARS)


class LabelSerializer(serializers.Serializer[Any]):
    targetId = Text(max_length=MAX_ID_CHARS)
    label = Text(required=False, allow_null=True, allow_blank=True, default=None)  # type: ignore[assignment]  # a field named label


class AppendSerializer(serializers.Serializer[Any]):
    entries = serializers.ListField(child=serializers.JSONField(), allow_empty=False, max_length=10000)
    expectedLeaf = Text(required=False, allow_null=True, max_length=MAX_ID_CHARS)


class ImportSerializer(serializers.Serializer[Any]):
    file = serializers.FileField(help_text="A Pi session file (.jsonl)")


# -- context --------------------------------------------------------------------------------------------


def js_value(value: Any) -> Any:
    """Return ``value`` as JSON.stringify would send it (NaN as null, undefined fields dropped)."""
    return json.loads(js_stringify(value))


def _set_aside(projection: Any, path: Any) -> dict[str, Any] | None:
    return set_aside_json(set_aside_usage(projection, path))


def set_aside_json(usage: SetAsideUsage | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    return {
        "tokens": usage.tokens,
        "entryId": usage.entry_id,
        "resetId": usage.reset_id,
        "resetType": usage.reset_type,
    }


def context_page_payload(
    page: ContextPage, window: int | None, *, llm: bool = False, set_aside: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Shape a context page read from running sums: the same fields as ``context_payload`` gives for
    head and tail, without the list of every context entry. Each message also says its entry's depth,
    the cursor (``beforeDepth``) of the page before it."""
    totals = page.totals
    estimate = totals.estimate
    shown = page.head + page.tail
    parts = context_breakdown_from_sums(totals.system_messages, totals.plain_tokens, estimate)
    tokens = parts.total
    return js_value(
        {
            "leafId": page.leaf.entry_id,
            "model": page.settings.model,
            "thinkingLevel": page.settings.thinking_level,
            "messageCount": totals.message_count,
            "breakdown": {
                "systemPrompt": parts.system_prompt,
                "tools": parts.tools,
                "messages": parts.messages,
                "total": parts.total,
                "fromUsage": parts.from_usage,
            },
            "skippedMessages": page.skipped,
            "skippedAfter": len(page.head) if page.skipped else None,
            "messages": [
                {
                    "entryId": m.entry_id,
                    "tokens": estimate_tokens(m.message),
                    "message": m.message,
                    "depth": m.depth,
                }
                for m in shown
            ],
            "llmMessages": convert_to_llm(m.message for m in shown) if llm else None,
            "estimate": {
                "tokens": estimate.tokens,
                "usageTokens": estimate.usage_tokens,
                "trailingTokens": estimate.trailing_tokens,
                "lastUsageIndex": estimate.last_usage_index,
                "setAsideUsage": set_aside if set_aside is not None else set_aside_json(totals.set_aside),
            },
            "contextWindow": (
                {"window": window, "used": tokens, "fraction": tokens / window} if window else None
            ),
        }
    )


def context_payload(
    view: ContextView,
    window: int | None,
    *,
    head: int = 0,
    tail: int | None = None,
    before: int | None = None,
    llm: bool = True,
) -> dict[str, Any]:
    """Shape a projection: messages with their source entries and token estimates, then LLM messages.

    With ``tail`` only the first ``head`` and the last ``tail`` messages are shaped (long uncompacted
    paths); ``skippedMessages`` says how many between them were left out. ``before`` makes the tail end
    before that index, so a page of older messages is read the same way. Estimates cover everything.
    """
    projection = view.projection
    flat = [(pe.entry.id, m) for pe in projection.entries for m in pe.messages]
    skipped = 0
    shown = flat
    if tail is not None:
        end = len(flat) if before is None else min(before, len(flat))
        first = min(head, end)
        start = max(first, end - tail)
        skipped = start - first
        shown = flat[:first] + flat[start:end]
    messages = [{"entryId": entry_id, "tokens": estimate_tokens(m), "message": m} for entry_id, m in shown]
    estimate = view.estimate
    parts = context_breakdown(projection.messages, estimate)
    # The gauge's total: the three parts of the request. With a trusted usage it is Pi's estimate; without
    # one it may pass Pi's by a few tokens, as it counts the prompt and the tool definitions as sent.
    tokens = parts.total
    return js_value(
        {
            "leafId": view.leaf.entry_id if view.leaf is not None else None,
            "model": projection.model,
            "thinkingLevel": projection.thinking_level,
            "contextEntries": [pe.entry.id for pe in projection.entries],
            "messageCount": len(flat),
            "breakdown": {
                "systemPrompt": parts.system_prompt,
                "tools": parts.tools,
                "messages": parts.messages,
                "total": parts.total,
                "fromUsage": parts.from_usage,
            },
            "skippedMessages": skipped,
            "skippedAfter": head if skipped else None,
            "messages": messages,
            "llmMessages": convert_to_llm(m for _, m in shown) if llm else None,
            # Pi's own estimate, the one auto-compaction compares with the window.
            "estimate": {
                "tokens": estimate.tokens,
                "usageTokens": estimate.usage_tokens,
                "trailingTokens": estimate.trailing_tokens,
                "lastUsageIndex": estimate.last_usage_index,
                # The last usage the provider reported, when the estimate no longer rests on it.
                "setAsideUsage": _set_aside(projection, view.path),
            },
            "contextWindow": (
                {"window": window, "used": tokens, "fraction": tokens / window} if window else None
            ),
        }
    )
