from django.apps import AppConfig


class TeamsConfig(AppConfig):
    name = "teams"
    label = "teams"
    verbose_name = "Teams"
