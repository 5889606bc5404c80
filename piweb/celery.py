"""The Celery application; tasks are discovered in each installed app's tasks.py."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "piweb.settings")

app = Celery("piweb")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# Each worker tells readiness which queues it serves while its consumer runs (/readyz, "workers").
app.steps["consumer"].add("piweb.worker_heartbeat:Heartbeat")
