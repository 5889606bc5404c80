from django.apps import AppConfig


class CostsConfig(AppConfig):
    name = "costs"
    label = "costs"
    verbose_name = "Costs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Costs listen to sessions_app's entry store; sessions_app never imports them.
        from costs import recording
        from sessions_app.facade import connect_entries_stored

        connect_entries_stored(recording.record, dispatch_uid="piweb-costs", acts_on=recording.ACTS_ON)
