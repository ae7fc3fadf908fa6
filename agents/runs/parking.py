"""Parked runs, the read side: whether a parked run's decision has landed, and which ones a lost
message left waiting.

A run whose approval is still pending after the in-process hold is parked
(:func:`agents.runs.lifecycle.run_park`): its last checkpoint holds the pending call and its task ends.
When the request closes, :mod:`agents.runs.wake` queues the run's resumption in a Celery worker. The
sweeper queues again any parked run whose decision is older than :data:`REQUEUE_AFTER` (a lost message),
and a cancel from the chat ends a parked run at once (:func:`agents.runs.lifecycle.run_cancel_parked`).
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from django.db.models import Exists, OuterRef
from django.utils import timezone

from agents.models import RunStatus
from agents.runs import addressed
from agents.runs.lifecycle import run_resume_parked
from agents.services import RunRefused
from hooks.addressed import approvals
from hooks.models import ApprovalStatus

REQUEUE_AFTER = timedelta(seconds=30)


def approval_decided(approval_id: Any) -> bool:
    """Whether the approval request has left ``pending``."""
    status = approvals().filter(pk=approval_id).values_list("status", flat=True).first()
    return status is not None and status != ApprovalStatus.PENDING


def run_parked_on(*, run_id: Any, approval_id: Any) -> bool:
    """Whether the run is parked on that approval."""
    return addressed.runs().filter(pk=run_id, status=RunStatus.PARKED, parked_on=approval_id).exists()


class ParkedClaim(StrEnum):
    """What :func:`parked_run_claim` found."""

    CLAIMED = "claimed"  # the run is running again under the caller's lease: the caller resumes it
    NOT_PARKED = "not parked"  # it ended, or was cancelled, or resumed by someone else already
    STILL_WAITING = "still waiting"  # its request is still open
    TAKEN = "taken"  # another process claimed it between the read and the claim


def parked_run_claim(*, run_id: uuid.UUID, owner: str) -> ParkedClaim:
    """Claim a parked run whose request closed, for ``owner``; exactly one caller gets ``CLAIMED``
    (the claim is conditional on ``parked``)."""
    run = addressed.runs().filter(pk=run_id).values("status", "parked_on").first()
    if run is None or run["status"] != RunStatus.PARKED:
        return ParkedClaim.NOT_PARKED
    if run["parked_on"] is not None and not approval_decided(run["parked_on"]):
        return ParkedClaim.STILL_WAITING
    try:
        claimed = run_resume_parked(run_id=run_id, owner=owner)
    except RunRefused:  # a newer run took the conversation meanwhile
        claimed = False
    return ParkedClaim.CLAIMED if claimed else ParkedClaim.TAKEN


def parked_runs_decided(*, now: datetime | None = None, limit: int = 100) -> list[uuid.UUID]:
    """Parked runs whose approval was decided more than :data:`REQUEUE_AFTER` ago (nobody resumed them)."""
    now = now or timezone.now()
    closed = (
        approvals()
        .filter(pk=OuterRef("parked_on"), decided_at__lt=now - REQUEUE_AFTER)
        .exclude(status=ApprovalStatus.PENDING)
    )
    return list(
        addressed.runs().filter(Exists(closed), status=RunStatus.PARKED).values_list("pk", flat=True)[:limit]
    )
