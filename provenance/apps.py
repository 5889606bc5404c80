from django.apps import AppConfig


class ProvenanceConfig(AppConfig):
    name = "provenance"
    label = "provenance"
    verbose_name = "Provenance"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Commits and pull requests are read from bash results as they are stored, whatever the path.
        from provenance import recording, registrations
        from sessions_app.facade import connect_entries_stored, signals

        connect_entries_stored(recording.record, dispatch_uid="piweb-provenance", acts_on=recording.ACTS_ON)
        # Sessions stored before provenance, or by the previous release during an upgrade (reconcile).
        signals.bookkeeping_checked.connect(
            recording.reconcile_session, dispatch_uid="piweb-provenance-reconcile"
        )
        registrations.register()
