"""``manage.py sweep_runs``: what the ``sweep-runs`` beat task does, once, now (operators and tests)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand

from agents.runs.lifecycle import runs_interrupt_lapsed
from agents.runs.tasks import parked_runs_requeue


class Command(BaseCommand):
    help = (
        "Mark running runs whose process stopped renewing its lease as interrupted (telling their chats), "
        "and queue again parked runs whose decision was not acted on. Prints the outcome as JSON."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        interrupted = runs_interrupt_lapsed()
        requeued = parked_runs_requeue()
        self.stdout.write(json.dumps({"interrupted": [str(pk) for pk in interrupted], "requeued": requeued}))
