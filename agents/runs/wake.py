"""The one wake-up of a run waiting on a human, whichever process holds it.

A call waiting on a human is *held* in the approval gate of the process running it for a short while
(``APPROVAL_INPROCESS_HOLD_SECONDS``), then *parked*: no process holds it, its last checkpoint holds the
pending call. When the approval request closes (decided, expired or cancelled), in any process, the
transaction that closed it sends ``hooks.signals.approval_closed`` once it commits (the one crossing from
the guard rails up to the runs: hooks sit below agents) and :func:`run_wake` does exactly one of two
things, chosen by the run's status:

- the run is parked on that request: its resumption is queued for a Celery worker
  (:func:`agents.runs.tasks.resume_parked_run`, which claims the run or finds it taken);
- otherwise the gate that holds it, in whatever process, is told through the request's channel-layer
  group (:func:`hooks.services.approval_notify`).

A run that parks just as its request closes is the one race: the decision's wake-up still found it held,
and the gate it told had already let go. So once the parking commits, the run manager that parked it
claims it back if its request is closed and resumes it in place
(:func:`agents.runs.parking.parked_run_claim`; a worker woken as well finds it taken: the claim is
conditional on ``parked``).

Two fallbacks cover a wake-up lost with a killed process or a dropped message, and are nothing more:
the gate re-reads the request every ``APPROVAL_RECHECK_SECONDS``, and the sweeper queues again a parked
run whose request closed more than :data:`agents.runs.parking.REQUEUE_AFTER` ago.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from agents.runs.parking import run_parked_on
from agents.runs.tasks import resume_queue
from hooks.services import approval_notify


@dataclass(frozen=True, slots=True)
class ResumeQueued:
    """The run was parked on the request: a worker will resume it."""

    run_id: uuid.UUID


@dataclass(frozen=True, slots=True)
class HolderTold:
    """The run (if any) is not parked: the process whose gate holds it was told."""

    approval_id: uuid.UUID


Wake = ResumeQueued | HolderTold


def run_wake(*, approval_id: Any, run_id: Any, status: str) -> Wake:
    """Wake whatever waits on the request ``approval_id`` that just closed with ``status``."""
    approval_id = uuid.UUID(str(approval_id))
    if run_id is not None and run_parked_on(run_id=run_id, approval_id=approval_id):
        run_id = uuid.UUID(str(run_id))
        resume_queue(run_id)
        return ResumeQueued(run_id)
    approval_notify(approval_id, status)
    return HolderTold(approval_id)


def on_approval_closed(*, approval_id: Any, run_id: Any, status: str, **_: Any) -> None:
    """Receiver of ``hooks.signals.approval_closed``."""
    run_wake(approval_id=approval_id, run_id=run_id, status=status)
