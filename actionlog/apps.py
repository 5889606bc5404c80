from django.apps import AppConfig


class ActionlogConfig(AppConfig):
    name = "actionlog"
    label = "actionlog"
    verbose_name = "Action log"
