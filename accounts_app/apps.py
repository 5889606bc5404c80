from django.apps import AppConfig


class AccountsAppConfig(AppConfig):
    name = "accounts_app"
    label = "accounts_app"
    verbose_name = "Sign-in"

    def ready(self) -> None:
        from accounts_app import receivers  # noqa: F401  (connects the group sync to allauth's sign-in signal)
