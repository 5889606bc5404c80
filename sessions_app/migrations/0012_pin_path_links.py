"""Path links made without an entry followed the session's leaf; pin each to the leaf it shows now."""

from __future__ import annotations

from typing import Any

from django.db import migrations
from django.db.models import OuterRef, Subquery


def pin(apps: Any, schema_editor: Any) -> None:
    ShareLink = apps.get_model("sessions_app", "ShareLink")
    ChatSession = apps.get_model("sessions_app", "ChatSession")
    leaf = ChatSession.objects.filter(pk=OuterRef("session_id")).values("leaf_entry_id")[:1]
    ShareLink.objects.filter(scope="path", entry_id__isnull=True).update(entry_id=Subquery(leaf))


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0011_team_invitations")]

    operations = [migrations.RunPython(pin, migrations.RunPython.noop)]
