from django.apps import AppConfig


class OrganizeConfig(AppConfig):
    name = "organize"
    label = "organize"
    verbose_name = "Organize"

    def ready(self) -> None:
        from organize import registry

        registry.register()
