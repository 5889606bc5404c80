from django.apps import AppConfig


class AgentConfig(AppConfig):
    name = "agent"
    label = "agent"
    verbose_name = "Agent runs"
    default_auto_field = "django.db.models.BigAutoField"
