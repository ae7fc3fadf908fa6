"""Logging filters that keep the console readable: routine periodic work is silent unless it acts.

Celery logs every beat tick ("Scheduler: Sending due task …") and every task's receipt and success at
INFO. For the periodic housekeeping tasks (the run sweeper, the approval expiry) that is two or three
lines every few seconds saying nothing happened, which scrolls ``make run``'s once-only admin password
off the screen. Those tasks log at INFO themselves when they change something, and their failures are
WARNING or ERROR records that pass.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

# The loggers whose routine INFO records the filter judges.
BEAT_LOGGER = "celery.beat"
RECEIVED_LOGGER = "celery.worker.strategy"
SUCCEEDED_LOGGER = "celery.app.trace"


def routine_task_names() -> frozenset[str]:
    """Names of the tasks beat runs on a schedule (``CELERY_BEAT_SCHEDULE``)."""
    from django.conf import settings

    schedule = getattr(settings, "CELERY_BEAT_SCHEDULE", {}) or {}
    return frozenset(str(entry["task"]) for entry in schedule.values() if "task" in entry)


def _task_name(record: logging.LogRecord) -> str | None:
    if record.name == BEAT_LOGGER:
        # info("Scheduler: Sending due task %s (%s)", entry.name, entry.task)
        if record.msg.startswith("Scheduler: Sending due task") and isinstance(record.args, tuple):
            return str(record.args[-1]) if record.args else None
        return None
    data = getattr(record, "data", None)  # Celery passes the task's context as extra={"data": ...}
    if isinstance(data, dict) and (" received" in str(record.msg) or " succeeded " in str(record.msg)):
        return str(data.get("name"))
    return None


class QuietRoutineTasks(logging.Filter):
    """Drop Celery's INFO records about routine periodic tasks (sent by beat, received, succeeded)."""

    def __init__(self, tasks: Iterable[str] | None = None) -> None:
        super().__init__()
        self._tasks = frozenset(tasks) if tasks is not None else None

    @property
    def tasks(self) -> frozenset[str]:
        if self._tasks is None:  # settings are read on first use: the filter is built while they load
            self._tasks = routine_task_names()
        return self._tasks

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO:
            return True
        name = _task_name(record)
        return name is None or name not in self.tasks
