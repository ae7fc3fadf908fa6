"""The Celery application. ``celery -A platform_core worker --beat`` runs tasks of every app."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "platform_core.settings")

app = Celery("platform_core")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
