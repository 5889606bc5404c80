from django.apps import AppConfig


class RunnersConfig(AppConfig):
    name = "runners"
    label = "runners"
    verbose_name = "Runners"

    def ready(self) -> None:
        from runners import receivers  # noqa: F401  (connects to the agent's signals)
