from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules


class ActionlogConfig(AppConfig):
    name = "actionlog"
    label = "actionlog"
    verbose_name = "Action log"

    def ready(self) -> None:
        # Every app's verbs, declared before any filter or page lists them; found by name, as the admin
        # finds admin modules, so the log imports none of the apps above it.
        autodiscover_modules("verbs")
