"""Share links keep only a hash of their token and its first characters; links made before keep working."""

from django.db import migrations, models


def hash_link_tokens(apps, schema_editor):
    """Replace each stored token by its hash and prefix, so the addresses already handed out still open."""
    from sessions_app.link_tokens import hash_token, token_prefix

    ShareLink = apps.get_model("sessions_app", "ShareLink")
    rows = list(ShareLink.objects.exclude(token=None).only("pk", "token"))
    for link in rows:
        link.token_hash = hash_token(link.token)
        link.token_prefix = token_prefix(link.token)
        link.token = None
    ShareLink.objects.bulk_update(rows, ["token_hash", "token_prefix", "token"], batch_size=1000)


def restore_token_column(apps, schema_editor):
    """Going back: the tokens are gone, so the old column gets the hashes (the old links stop opening)."""
    ShareLink = apps.get_model("sessions_app", "ShareLink")
    ShareLink.objects.update(token=models.F("token_hash"))


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0013_segment_first_seq"),
    ]

    operations = [
        migrations.AlterField(
            model_name="sharelink",
            name="token",
            field=models.CharField(max_length=64, null=True, unique=True),
        ),
        migrations.AddField(
            model_name="sharelink",
            name="token_hash",
            field=models.CharField(
                max_length=64, null=True, editable=False, help_text="SHA-256 of the token"
            ),
        ),
        migrations.AddField(
            model_name="sharelink",
            name="token_prefix",
            field=models.CharField(
                blank=True,
                default="",
                editable=False,
                help_text="The token's first characters",
                max_length=8,
            ),
        ),
        migrations.RunPython(hash_link_tokens, restore_token_column),
        migrations.AlterField(
            model_name="sharelink",
            name="token_hash",
            field=models.CharField(
                editable=False, help_text="SHA-256 of the token", max_length=64, unique=True
            ),
        ),
        migrations.RemoveField(
            model_name="sharelink",
            name="token",
        ),
    ]
