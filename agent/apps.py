from django.apps import AppConfig


class AgentConfig(AppConfig):
    name = "agent"
    label = "agent"
    verbose_name = "Agent runs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models import Exists, OuterRef

        from agent.models import AgentRun
        from sessions_app.facade import register_state

        # The session list's ``state``: a run in progress, and runs that failed (through the session index).
        register_state(
            "running",
            "Running",
            lambda q, viewer: q.filter(
                Exists(AgentRun.objects.filter(session=OuterRef("pk"), status__in=AgentRun.ACTIVE))
            ),
            order=10,
        )
        register_state(
            "failed",
            "Failed runs",
            lambda q, viewer: q.filter(
                Exists(AgentRun.objects.filter(session=OuterRef("pk"), status=AgentRun.Status.FAILED))
            ),
            order=20,
        )
