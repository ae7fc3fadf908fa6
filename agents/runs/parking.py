"""Parked runs, the read side: whether a parked run's decision has landed, and which ones a lost
message left waiting.

A run whose approval is still pending after the in-process hold is parked
(:func:`agents.runs.lifecycle.run_park`): its last checkpoint holds the pending call and its task ends.
When the decision lands, ``approval_decide``'s ``on_commit`` sends ``hooks.signals.approval_closed``;
:mod:`agents.runs.tasks` queues the run's resumption in a Celery worker. The sweeper queues again any
parked run whose decision is older than :data:`REQUEUE_AFTER` (a lost message), and a cancel from the
chat ends a parked run at once (:func:`agents.runs.lifecycle.run_cancel_parked`).
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Exists, OuterRef
from django.utils import timezone

from agents.models import RunStatus
from agents.runs import addressed
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
