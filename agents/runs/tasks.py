"""Celery tasks of durable runs, the only module of the package that knows Celery: the sweeper (beat),
the resumption of parked runs in a worker, and the receivers that queue it.

The task names are the ones the beat schedule (``platform_core/settings.py``) and queued messages use.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime
from typing import Any

from celery import shared_task

from agents.models import RunStatus
from agents.runs import addressed
from agents.runs.leases import lease_owner_new
from agents.runs.lifecycle import run_resume_parked, runs_interrupt_lapsed
from agents.runs.parking import approval_decided, parked_runs_decided, run_parked_on
from agents.runs.worker import run_in_worker
from agents.services import RunRefused

logger = logging.getLogger(__name__)


def _queue_resume(run_id: uuid.UUID | str) -> None:
    try:
        resume_parked_run.delay(str(run_id))
    except Exception:
        logger.exception("could not queue the resumption of parked run %s; the sweeper will", run_id)


def on_approval_closed(*, approval_id: Any, run_id: Any, **_: Any) -> None:
    """Receiver of ``hooks.signals.approval_closed``: resume the run parked on that approval."""
    if run_id is not None and run_parked_on(run_id=run_id, approval_id=approval_id):
        _queue_resume(run_id)


def on_run_parked(*, run_id: uuid.UUID, approval_id: Any, **_: Any) -> None:
    """Receiver of :data:`agents.runs.lifecycle.run_parked`: the decision may have landed while the run
    was parking, when nobody would resume it."""
    if approval_id is not None and approval_decided(approval_id):
        _queue_resume(run_id)


def parked_runs_requeue(*, now: datetime | None = None, limit: int = 100) -> int:
    """Queue again every parked run whose approval was decided a while ago (a lost message)."""
    stale = parked_runs_decided(now=now, limit=limit)
    for run_id in stale:
        _queue_resume(run_id)
    return len(stale)


@shared_task(name="agents.tasks.sweep_runs", acks_late=True)
def sweep_runs() -> dict[str, int]:
    """Interrupt runs whose process stopped renewing their lease; re-queue decided parked runs."""
    interrupted = runs_interrupt_lapsed()  # logs a warning when it interrupts any
    requeued = parked_runs_requeue()
    if requeued:
        logger.info("re-queued %d parked run(s) whose approval was decided", requeued)
    return {"interrupted": len(interrupted), "requeued": requeued}


@shared_task(name="agents.tasks.resume_parked_run", acks_late=True)
def resume_parked_run(run_id: str) -> str:
    """Resume a parked run whose decision arrived, here in the worker, from its checkpoint.

    Idempotent: a run that is no longer parked (another worker took it, the user cancelled it), or whose
    approval is still pending, is left alone.
    """
    run = addressed.runs().filter(pk=run_id).values("status", "parked_on").first()
    if run is None or run["status"] != RunStatus.PARKED:
        return "not parked"
    if run["parked_on"] is not None and not approval_decided(run["parked_on"]):
        return "still waiting"
    owner = lease_owner_new()
    try:
        claimed = run_resume_parked(run_id=uuid.UUID(run_id), owner=owner)
    except RunRefused:
        claimed = False
    if not claimed:
        return "taken"
    logger.info("resuming parked run %s in this worker", run_id)
    run_in_worker(uuid.UUID(run_id), owner=owner)
    return "resumed"
