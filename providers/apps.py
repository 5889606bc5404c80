from django.apps import AppConfig


class ProvidersConfig(AppConfig):
    name = "providers"
    label = "providers"
    verbose_name = "Model providers"

    def ready(self) -> None:
        # Registers the check that names providers whose stored key cannot be decrypted.
        # Each process keeps the providers' table (providers.windows): any change makes them read it again.
        # A test database flushed between tests emits post_migrate, which counts as a change too.
        from django.db.models.signals import post_delete, post_migrate, post_save

        from providers import checks  # noqa: F401
        from providers.models import LLMProvider
        from providers.windows import providers_changed

        post_save.connect(providers_changed, sender=LLMProvider, dispatch_uid="providers-changed-save")
        post_delete.connect(providers_changed, sender=LLMProvider, dispatch_uid="providers-changed-delete")
        post_migrate.connect(providers_changed, dispatch_uid="providers-changed-migrate")
