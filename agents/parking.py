"""Parked runs: runs waiting for a human decision longer than a process should hold them.

A run whose approval is still pending after the in-process hold is *parked* (:func:`run_park`): its
last checkpoint holds the pending call, its task ends, and it keeps its conversation (follow-ups the
user sends meanwhile are stored and taken in when it resumes). When the decision lands,
``approval_decide``'s ``on_commit`` sends ``hooks.signals.approval_closed``; :func:`on_approval_closed`
queues ``agents.tasks.resume_parked_run``, which resumes the run from its checkpoint in a Celery worker.
The sweeper re-queues any parked run whose decision is older than :data:`REQUEUE_AFTER` (a lost
message), and a cancel from the chat ends a parked run at once (:func:`run_cancel_parked`).
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from agents.events_store import event_append
from agents.models import Run, RunStatus

logger = logging.getLogger(__name__)

REQUEUE_AFTER = timedelta(seconds=30)


def _queue_resume(run_id: uuid.UUID | str) -> None:
    from agents.tasks import resume_parked_run

    try:
        resume_parked_run.delay(str(run_id))
    except Exception:
        logger.exception("could not queue the resumption of parked run %s; the sweeper will", run_id)


def approval_decided(approval_id: Any) -> bool:
    """Whether the approval request has left ``pending``."""
    from hooks.models import ApprovalRequest, ApprovalStatus

    status = ApprovalRequest.objects.filter(pk=approval_id).values_list("status", flat=True).first()
    return status is not None and status != ApprovalStatus.PENDING


@transaction.atomic
def run_park(*, run_id: uuid.UUID, owner: str, approval_id: Any) -> bool:
    """Park a running run of ``owner`` on ``approval_id``; False if the run is no longer its own."""
    parked = Run.objects.filter(pk=run_id, status=RunStatus.RUNNING, lease_owner=owner).update(
        status=RunStatus.PARKED,
        parked_on=approval_id,
        lease_owner="",
        lease_expires_at=None,
        stop_reason="parked",
    )
    if parked:
        logger.info("run %s parked on approval %s", run_id, approval_id)
        # The decision may have landed while the run was parking, when nobody would resume it.
        transaction.on_commit(lambda: _resume_if_decided(run_id, approval_id))
    return bool(parked)


def _resume_if_decided(run_id: uuid.UUID, approval_id: Any) -> None:
    if approval_id is not None and approval_decided(approval_id):
        _queue_resume(run_id)


def on_approval_closed(*, approval_id: Any, run_id: Any, **_: Any) -> None:
    """Receiver of ``hooks.signals.approval_closed``: resume the run parked on that approval."""
    if run_id is None:
        return
    if Run.objects.filter(pk=run_id, status=RunStatus.PARKED, parked_on=approval_id).exists():
        _queue_resume(run_id)


def parked_runs_requeue(*, now: datetime | None = None, limit: int = 100) -> int:
    """Queue again every parked run whose approval was decided more than :data:`REQUEUE_AFTER` ago."""
    from hooks.models import ApprovalRequest, ApprovalStatus

    now = now or timezone.now()
    closed = ApprovalRequest.objects.filter(
        pk=OuterRef("parked_on"), decided_at__lt=now - REQUEUE_AFTER
    ).exclude(status=ApprovalStatus.PENDING)
    stale = list(
        Run.objects.filter(Exists(closed), status=RunStatus.PARKED).values_list("pk", flat=True)[:limit]
    )
    for run_id in stale:
        _queue_resume(run_id)
    return len(stale)


@transaction.atomic
def run_cancel_parked(*, run_id: uuid.UUID) -> bool:
    """Cancel a parked run (the user stopped it): its request is cancelled, the chat gets the
    ``approval`` cancelled and a cancelled ``done``; False when the run is not parked any more."""
    from hooks.approval import approval_approvers, approval_event_data
    from hooks.models import ApprovalRequest
    from hooks.services import approval_cancel

    run = Run.objects.select_for_update().filter(pk=run_id, status=RunStatus.PARKED).first()
    if run is None:
        return False
    run.status = RunStatus.CANCELLED
    run.stop_reason = "cancelled"
    run.finished_at = timezone.now()
    approval_id, run.parked_on = run.parked_on, None
    run.save(update_fields=["status", "stop_reason", "finished_at", "parked_on"])
    approval = ApprovalRequest.objects.filter(pk=approval_id).first() if approval_id else None
    if approval is not None and approval_cancel(approval=approval):
        approval.refresh_from_db()
        data = approval_event_data(approval, approval.tool_call_id, approval_approvers(approval), None)
        event_append(run=run, channel="approval", data=data)
    checkpoint = run.checkpoint or {}
    event_append(
        run=run,
        channel="done",
        data={
            "answer": "",
            "iterations": int(checkpoint.get("iteration") or 0),
            "usage": checkpoint.get("usage") or {},
            "elapsed": float(checkpoint.get("elapsed") or 0.0),
            "cancelled": True,
            "stop_reason": "cancelled",
        },
    )
    return True
