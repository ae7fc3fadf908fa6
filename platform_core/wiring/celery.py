"""The Celery application. ``celery -A platform_core worker --beat`` runs tasks of every app."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_init, worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "platform_core.settings")

app = Celery("platform_core")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
@worker_process_init.connect
def _tracing_setup(**kwargs: object) -> None:
    """OTLP tracing in the worker (and in each forked pool process: the exporter's thread does not survive
    a fork). https://docs.celeryq.dev/en/stable/userguide/signals.html#worker-process-init"""
    from platform_core.wiring.tracing_setup import tracing_setup

    tracing_setup()
