"""Entries written with an unnamed API token named it by 15 characters of its key ("token 0123456789abcde");
they now say 8, as the token lists do. The author's identity (``key``) follows its new fields, unless
an author with those fields exists already, when the row keeps its old key."""

import hashlib
import re

from django.db import migrations

_LONG = re.compile(r"token [0-9a-f]{15}")
SHORT = len("token ") + 8


def _key(row, via):
    # pitree.attribution.Author.key, as of this migration.
    user = "" if row.user_id is None else str(row.user_id)
    text = "\x1f".join([row.kind, row.name, user, via, str(row.imported)])
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def shorten(apps, schema_editor):
    EntryAuthor = apps.get_model("sessions_app", "EntryAuthor")
    for row in EntryAuthor.objects.filter(kind="device", via__regex=r"^token [0-9a-f]{15}$").iterator():
        if not _LONG.fullmatch(row.via):
            continue
        via = row.via[:SHORT]
        key = _key(row, via)
        fields = ["via"]
        if not EntryAuthor.objects.filter(key=key).exists():
            row.key = key
            fields.append("key")
        row.via = via
        row.save(update_fields=fields)


class Migration(migrations.Migration):
    # Row by row, each committed alone: entries written meanwhile by those authors wait for one row at most,
    # and a run stopped half-way is finished by running it again (it finds only the long names left).
    atomic = False

    dependencies = [("sessions_app", "0028_teams_and_action_log_moved")]

    operations = [migrations.RunPython(shorten, migrations.RunPython.noop)]
