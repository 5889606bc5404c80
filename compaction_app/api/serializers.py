"""Request and response shapes of the compaction API."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from compaction_app.models import CompactionRun
from core.api.fields import Text


class CompactRequestSerializer(serializers.Serializer[Any]):
    customInstructions = Text(required=False, allow_blank=True, allow_null=True)


class CompactionOperationSerializer(serializers.ModelSerializer[CompactionRun]):
    """An operation as clients see it; provider keys and idempotency keys never appear."""

    operationId = serializers.UUIDField(source="operation_id", read_only=True)
    sessionId = serializers.IntegerField(source="session_id", read_only=True)
    result = serializers.SerializerMethodField()
    error = serializers.SerializerMethodField()

    class Meta:
        model = CompactionRun
        fields = ["operationId", "kind", "status", "reason", "sessionId", "error", "result"]

    def get_error(self, run: CompactionRun) -> str | None:
        return run.error or None

    def get_result(self, run: CompactionRun) -> dict[str, Any] | None:
        if run.status != CompactionRun.Status.SUCCEEDED:
            return None
        if run.kind == CompactionRun.Kind.COMPACTION:
            return {
                "entryId": run.result_entry_id,
                "summary": run.summary,
                "firstKeptEntryId": run.first_kept_entry_id,
                "tokensBefore": run.tokens_before,
                "estimatedTokensAfter": run.tokens_after,
                "usage": run.usage,
            }
        body: dict[str, Any] = {"leafId": run.result_leaf_id, "summaryEntryId": run.result_entry_id}
        if run.editor_text is not None:
            body["editorText"] = run.editor_text
        return body
