"""Deleting a session hides it at once (deleted_at); a background task purges its rows afterwards."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0014_hashed_share_link_tokens"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="chatsession",
            name="unique_pi_session_per_owner",
        ),
        migrations.AddField(
            model_name="chatsession",
            name="deleted_at",
            field=models.DateTimeField(
                blank=True,
                help_text="Deleted by its owner: hidden everywhere until its rows are purged",
                null=True,
            ),
        ),
        migrations.AddIndex(
            model_name="chatsession",
            index=models.Index(
                condition=models.Q(("deleted_at__isnull", False)),
                fields=["deleted_at"],
                name="session_deleted_idx",
            ),
        ),
        migrations.AddConstraint(
            model_name="chatsession",
            constraint=models.UniqueConstraint(
                condition=models.Q(("deleted_at__isnull", True)),
                fields=("owner", "pi_id"),
                name="unique_pi_session_per_owner",
            ),
        ),
    ]
