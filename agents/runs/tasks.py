"""Celery tasks of durable runs, the only module of the package that knows Celery: the sweeper (beat),
the resumption of parked runs in a worker, and its queueing (:mod:`agents.runs.wake` decides when). The
task noting memories after an answer lives in :mod:`agents.runs.note_tasks` (the run manager queues it,
and this module imports the manager through the worker); it is imported here so that workers know it.

The task names are the ones the beat schedule (``platform_core/settings.py``) and queued messages use.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime

from celery import shared_task

from agents.runs.leases import lease_owner_new
from agents.runs.lifecycle import runs_interrupt_lapsed
from agents.runs.note_tasks import note_memories  # noqa: F401 - registered with the worker's tasks
from agents.runs.parking import ParkedClaim, parked_run_claim, parked_runs_decided
from agents.runs.worker import run_in_worker

logger = logging.getLogger(__name__)


def resume_queue(run_id: uuid.UUID | str) -> None:
    """Queue the resumption of a parked run for a worker (a broker that is down is logged: the sweeper
    queues it again)."""
    try:
        resume_parked_run.delay(str(run_id))
    except Exception:
        logger.exception("could not queue the resumption of parked run %s; the sweeper will", run_id)


def parked_runs_requeue(*, now: datetime | None = None, limit: int = 100) -> int:
    """Queue again every parked run whose approval was decided a while ago (a lost message)."""
    stale = parked_runs_decided(now=now, limit=limit)
    for run_id in stale:
        resume_queue(run_id)
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
    owner = lease_owner_new()
    claim = parked_run_claim(run_id=uuid.UUID(run_id), owner=owner)
    if claim is not ParkedClaim.CLAIMED:
        return str(claim)
    logger.info("resuming parked run %s in this worker", run_id)
    run_in_worker(uuid.UUID(run_id), owner=owner)
    return "resumed"
