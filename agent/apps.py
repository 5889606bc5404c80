from django.apps import AppConfig


class AgentConfig(AppConfig):
    name = "agent"
    label = "agent"
    verbose_name = "Agent runs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The session list's states a run answers (sessions_app never imports this app).
        from collections.abc import Callable

        from django.db.models import Exists, OuterRef, QuerySet

        from agent.models import AgentRun
        from sessions_app.facade import ChatSession, SessionState, register_state

        def runs(*statuses: str) -> Callable[[QuerySet[ChatSession]], QuerySet[ChatSession]]:
            return lambda q: q.filter(
                Exists(AgentRun.objects.filter(session=OuterRef("pk"), status__in=statuses))
            )

        register_state(SessionState("running", "a run in progress", runs(*AgentRun.ACTIVE)))
        register_state(SessionState("failed", "a failed run", runs(AgentRun.Status.FAILED)))
