from django.apps import AppConfig


class ProvidersConfig(AppConfig):
    name = "providers"
    label = "providers"
    verbose_name = "Model providers"
