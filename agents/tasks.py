"""Celery tasks of durable runs: the sweeper (beat) and the resumption of parked runs in a worker."""

from __future__ import annotations

import logging
import uuid

from celery import shared_task

from agents.leases import lease_owner_new, run_resume_claim, runs_interrupt_lapsed
from agents.models import RunStatus
from agents.parking import approval_decided, parked_runs_requeue
from agents.services import RunRefused

logger = logging.getLogger(__name__)


@shared_task(acks_late=True)
def sweep_runs() -> dict[str, int]:
    """Interrupt runs whose process stopped renewing their lease; re-queue decided parked runs."""
    interrupted = runs_interrupt_lapsed()  # logs a warning when it interrupts any
    requeued = parked_runs_requeue()
    if requeued:
        logger.info("re-queued %d parked run(s) whose approval was decided", requeued)
    return {"interrupted": len(interrupted), "requeued": requeued}


@shared_task(acks_late=True)
def resume_parked_run(run_id: str) -> str:
    """Resume a parked run whose decision arrived, here in the worker, from its checkpoint.

    Idempotent: a run that is no longer parked (another worker took it, the user cancelled it), or whose
    approval is still pending, is left alone.
    """
    from agents.models import Run
    from agents.worker_runs import run_in_worker

    run = Run.objects.filter(pk=run_id).values("status", "parked_on").first()
    if run is None or run["status"] != RunStatus.PARKED:
        return "not parked"
    if run["parked_on"] is not None and not approval_decided(run["parked_on"]):
        return "still waiting"
    owner = lease_owner_new()
    try:
        claimed = run_resume_claim(run_id=uuid.UUID(run_id), owner=owner, from_statuses=(RunStatus.PARKED,))
    except RunRefused:
        claimed = False
    if not claimed:
        return "taken"
    logger.info("resuming parked run %s in this worker", run_id)
    run_in_worker(uuid.UUID(run_id), owner=owner)
    return "resumed"
