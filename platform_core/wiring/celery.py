"""The Celery application. ``celery -A platform_core worker --beat`` runs tasks of every app."""

from __future__ import annotations

import os
from pathlib import Path

from celery import Celery
from celery.signals import worker_init, worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "platform_core.settings")


def task_packages() -> list[str]:
    """The packages whose ``tasks`` module a worker imports at start-up: every installed app (Celery's
    Django autodiscovery) and every package inside the project's own apps that has one (``agents.usage``,
    ``agents.runs``: parts of an app, not apps), so that no task the code sends is unknown to the worker,
    which would drop its messages. Called once Django is set up."""
    from django.apps import apps

    packages = [config.name for config in apps.get_app_configs()]
    for config in apps.get_app_configs():
        root = Path(config.path)
        if "site-packages" in root.parts:  # a third-party app: its own tasks module is enough
            continue
        for module in sorted(root.rglob("tasks.py")):
            inner = module.parent.relative_to(root).parts
            if inner:
                packages.append(".".join((config.name, *inner)))
    return list(dict.fromkeys(packages))


app = Celery("platform_core")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(task_packages)


@worker_init.connect
@worker_process_init.connect
def _tracing_setup(**kwargs: object) -> None:
    """OTLP tracing in the worker (and in each forked pool process: the exporter's thread does not survive
    a fork). https://docs.celeryq.dev/en/stable/userguide/signals.html#worker-process-init"""
    from platform_core.wiring.tracing_setup import tracing_setup

    tracing_setup()
