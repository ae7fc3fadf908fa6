"""`make run`'s console: Celery beat and the periodic housekeeping tasks say nothing at INFO unless they act,
so the seeded admin's once-only password stays on screen.

The corpus feeds the platform's logging configuration (``settings.LOGGING``, applied by Django) the records
Celery writes, built from Celery's own format strings; a real worker with its beat, started as ``make run``
starts it, runs its schedule for a few seconds and prints nothing about the routine tasks.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from celery.app.trace import LOG_RECEIVED, LOG_SUCCESS
from django.db import connection

from agents.runs.tasks import sweep_runs
from hooks.tasks import expire_overdue_approvals
from platform_core.wiring.management.commands.serve import worker_command

ROOT = Path(__file__).resolve().parents[2]
SWEEP = "agents.tasks.sweep_runs"
EXPIRE = "hooks.tasks.expire_overdue_approvals"
CARD = "hooks.tasks.send_approval_card"


def _task_context(name: str) -> dict[str, object]:
    return {"id": "c0ffee", "name": name, "return_value": "{}", "runtime": 0.01, "args": "()", "kwargs": "{}"}


@dataclass(frozen=True)
class Line:
    """One record as Celery (or a task) logs it, and whether the console shows it."""

    name: str
    logger: str
    message: str
    args: tuple[object, ...] | dict[str, object] = ()
    level: int = logging.INFO
    extra: dict[str, object] = field(default_factory=dict)
    shown: bool = True


def _celery_line(
    name: str, logger: str, fmt: str, task: str, *, level: int = logging.INFO, shown: bool
) -> Line:
    context = _task_context(task)
    return Line(name, logger, fmt, (context,), level, {"data": context}, shown)


LINES = [
    Line(
        "beat-sends-the-sweeper",
        "celery.beat",
        "Scheduler: Sending due task %s (%s)",
        ("sweep-runs", SWEEP),
        shown=False,
    ),
    Line(
        "beat-sends-the-expiry",
        "celery.beat",
        "Scheduler: Sending due task %s (%s)",
        ("expire-overdue-approvals", EXPIRE),
        shown=False,
    ),
    Line("beat-starts", "celery.beat", "beat: Starting...", shown=True),
    _celery_line("sweeper-received", "celery.worker.strategy", LOG_RECEIVED, SWEEP, shown=False),
    _celery_line("sweeper-succeeded", "celery.app.trace", LOG_SUCCESS, SWEEP, shown=False),
    _celery_line("expiry-succeeded", "celery.app.trace", LOG_SUCCESS, EXPIRE, shown=False),
    _celery_line("card-received", "celery.worker.strategy", LOG_RECEIVED, CARD, shown=True),
    _celery_line("card-succeeded", "celery.app.trace", LOG_SUCCESS, CARD, shown=True),
    _celery_line(
        "sweeper-failed",
        "celery.app.trace",
        "Task %(name)s[%(id)s] raised",
        SWEEP,
        level=logging.ERROR,
        shown=True,
    ),
    Line(
        "sweeper-requeued-runs",
        "agents.runs.tasks",
        "re-queued %d parked run(s) whose approval was decided",
        (2,),
    ),
    Line(
        "sweeper-interrupted-runs",
        "agents.runs.lifecycle",
        "interrupted %d run(s)",
        (1,),
        level=logging.WARNING,
    ),
    Line("expiry-expired-requests", "hooks.tasks", "expired %d overdue approval requests", (3,)),
]


@pytest.mark.parametrize("line", LINES, ids=[line.name for line in LINES])
def test_the_console_shows_only_what_periodic_work_changed(caplog, line):
    caplog.set_level(logging.INFO)
    args = line.args if isinstance(line.args, tuple) else (line.args,)
    logging.getLogger(line.logger).log(line.level, line.message, *args, extra=line.extra)
    assert (len(caplog.records) == 1) is line.shown, [r.getMessage() for r in caplog.records]


@pytest.mark.django_db
def test_the_sweeper_and_the_expiry_say_nothing_when_there_is_nothing_to_do(caplog):
    caplog.set_level(logging.INFO)
    assert sweep_runs() == {"interrupted": 0, "requeued": 0}
    assert expire_overdue_approvals() == 0
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO] == []


def _database_url() -> str:
    settings = connection.settings_dict
    if settings["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{settings['NAME']}"
    return f"postgres://{settings['USER']}@{settings['HOST']}:{settings['PORT'] or 5432}/{settings['NAME']}"


@pytest.mark.django_db(transaction=True)
def test_a_worker_started_like_make_run_prints_nothing_about_its_routine_schedule(tmp_path):
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("CELERY_", "REDIS_"))},
        "DJANGO_SETTINGS_MODULE": "platform_core.settings",
        "DATABASE_URL": _database_url(),
        "CELERY_FILESYSTEM_FOLDER": str(tmp_path / "broker"),  # a broker of its own
        "RUN_SWEEP_SECONDS": "1",
        "PYTHONUNBUFFERED": "1",
    }
    command = [
        *worker_command(os.path.dirname(sys.executable)),
        "--schedule",
        str(tmp_path / "beat-schedule"),
    ]
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        worker = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and log.read_text(errors="replace").count(" ready.") == 0:
            assert worker.poll() is None, log.read_text(errors="replace")[-3000:]
            time.sleep(0.2)
        time.sleep(4)  # several sweeps (every second) and the expiry (at start) have run
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    output = log.read_text(errors="replace")
    assert " ready." in output, output[-3000:]
    assert "sweep_runs" not in output and "expire_overdue_approvals" not in output, output[-3000:]
    assert "Sending due task" not in output and "-------------- " not in output, output[-3000:]
