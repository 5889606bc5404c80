from django.apps import AppConfig


class SyncConfig(AppConfig):
    name = "sync"
    label = "sync"
    verbose_name = "Sync"
