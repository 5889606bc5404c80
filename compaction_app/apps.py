from django.apps import AppConfig


class CompactionAppConfig(AppConfig):
    name = "compaction_app"
    label = "compaction_app"
    verbose_name = "Compaction"
    default_auto_field = "django.db.models.BigAutoField"
