from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    label = "sessions_app"
    verbose_name = "Pi sessions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from sessions_app import changed_files, signals  # (importing signals connects its receivers)

        # The session list's count of changed files is kept with the tool results that change them.
        signals.connect_entries_stored(
            changed_files.record, dispatch_uid="piweb-changed-files", acts_on=changed_files.ACTS_ON
        )
        from sessions_app import session_filters
        from sessions_app.api import errors  # noqa: F401  (registers the API's answers to refusals)

        # The list's own filters, and the ``state`` parameter other apps add values to.
        session_filters.register()
