from django.apps import AppConfig


class LiveConfig(AppConfig):
    name = "live"
    label = "live"
    verbose_name = "Live views"
