from django.apps import AppConfig


class ProvidersConfig(AppConfig):
    name = "providers"
    label = "providers"
    verbose_name = "Model providers"

    def ready(self) -> None:
        # Registers the check that names providers whose stored key cannot be decrypted.
        from providers import checks  # noqa: F401
