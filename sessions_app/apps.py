from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    label = "sessions_app"
    verbose_name = "Pi sessions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from sessions_app import (  # (importing signals connects its receivers)
            changed_files,
            file_steps,
            signals,
        )

        # The session list's count of changed files is kept with the tool results that change them.
        signals.connect_entries_stored(
            changed_files.record, dispatch_uid="piweb-changed-files", acts_on=changed_files.ACTS_ON
        )
        # So do the steps the files view sums (whole sessions are stored with theirs).
        signals.connect_entries_stored(
            file_steps.record, dispatch_uid="piweb-file-steps", acts_on=file_steps.ACTS_ON
        )
        from sessions_app import session_filters
        from sessions_app.api import errors  # noqa: F401  (registers the API's answers to refusals)

        # The list's own filters, and the ``state`` parameter other apps add values to.
        session_filters.register()
