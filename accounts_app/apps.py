from django.apps import AppConfig


class AccountsAppConfig(AppConfig):
    name = "accounts_app"
    label = "accounts_app"
    verbose_name = "Sign-in"

    def ready(self) -> None:
        # The group sync at sign-in, and sockets closed when a credential stops working.
        # Registers the API token scheme with the OpenAPI generator.
        from accounts_app import (  # noqa: F401
            credentials,
            receivers,
            schema_auth,
        )
