"""Leases of running runs: which process holds a run, their renewal, and the sweeper.

A ``running`` run belongs to the process named by ``Run.lease_owner`` until ``lease_expires_at``. That
process renews the lease with every batch of events it writes (the event sink is fenced by it) and, for
quiet runs (a slow model, a human decision), every ``RUN_LEASE_RENEW_SECONDS``. A process that dies
(``kill -9``, a lost machine) stops renewing: the sweeper (a Celery beat task, every
``RUN_SWEEP_SECONDS``) marks its runs ``interrupted``, tells their chats with an ``error`` event
``{"code": "run_interrupted", "resumable": true}`` and so releases their conversations. With the
defaults (15 s lease, 10 s sweep) that happens within 25 s of the crash.

An interrupted run resumes from its checkpoint when the user asks (websocket ``{"type": "resume_run"}``):
:func:`run_resume_claim` moves it back to ``running`` under the lease of the process that resumes it.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from agents.events_store import event_append
from agents.models import Run, RunStatus
from agents.services import RunRefused

logger = logging.getLogger(__name__)

INTERRUPTED_CODE = "run_interrupted"

_process: tuple[int, str] | None = None


def process_id() -> str:
    """This process's name: host, pid and a random part (new after a fork)."""
    global _process
    pid = os.getpid()
    if _process is None or _process[0] != pid:
        _process = (pid, f"{socket.gethostname()[:60]}:{pid}:{secrets.token_hex(4)}")
    return _process[1]


def lease_owner_new() -> str:
    """A lease owner for one attempt at running a run in this process: a process that resumes a run it
    had lost must not pass the fence of its own earlier attempt."""
    return f"{process_id()}#{secrets.token_hex(3)}"


def lease_seconds() -> float:
    return float(getattr(settings, "RUN_LEASE_SECONDS", 15))


def lease_renew_seconds() -> float:
    return float(getattr(settings, "RUN_LEASE_RENEW_SECONDS", 5))


def _lease_until(now: datetime | None = None) -> datetime:
    return (now or timezone.now()) + timedelta(seconds=lease_seconds())


def run_lease_take(*, run_id: uuid.UUID, owner: str) -> bool:
    """Hold a running run that no process holds yet (or this one already does); False otherwise."""
    held = Run.objects.filter(pk=run_id, status=RunStatus.RUNNING, lease_owner__in=("", owner))
    return bool(held.update(lease_owner=owner, lease_expires_at=_lease_until()))


def run_leases_renew(*, leases: Mapping[uuid.UUID, str]) -> set[uuid.UUID]:
    """Renew the leases of ``{run_id: owner}``; returns the runs still held (the others were taken)."""
    if not leases:
        return set()
    held = Q()
    for run_id, owner in leases.items():
        held |= Q(pk=run_id, lease_owner=owner)
    mine = Run.objects.filter(held, status=RunStatus.RUNNING)
    mine.update(lease_expires_at=_lease_until())
    return set(mine.values_list("pk", flat=True))


def _lapsed(now: datetime) -> Q:
    # A run that never got a lease (its process died between creating and starting it) lapses too.
    return Q(lease_expires_at__lt=now) | Q(
        lease_expires_at__isnull=True, started_at__lt=now - timedelta(seconds=lease_seconds())
    )


def runs_interrupt_lapsed(*, now: datetime | None = None, limit: int = 200) -> list[uuid.UUID]:
    """The sweeper: mark every running run whose lease lapsed ``interrupted`` and tell its chat."""
    now = now or timezone.now()
    candidates = list(
        Run.objects.filter(_lapsed(now), status=RunStatus.RUNNING).values_list("pk", flat=True)[:limit]
    )
    interrupted = []
    for run_id in candidates:
        if _interrupt(run_id, now):
            interrupted.append(run_id)
    if interrupted:
        logger.warning("interrupted %d run(s) whose process stopped renewing its lease", len(interrupted))
    return interrupted


@transaction.atomic
def _interrupt(run_id: uuid.UUID, now: datetime) -> bool:
    # The row lock orders this against the last batch of a process that is slow rather than dead: its
    # fenced write either lands first (and the lease is then renewed, so nothing happens here) or fails.
    run = (
        Run.objects.select_for_update(skip_locked=True)
        .filter(_lapsed(now), pk=run_id, status=RunStatus.RUNNING)
        .first()
    )
    if run is None:
        return False
    logger.warning("run %s interrupted: the lease of %s lapsed", run.pk, run.lease_owner or "no process")
    run.status = RunStatus.INTERRUPTED
    run.stop_reason = "interrupted"
    run.lease_owner = ""
    run.lease_expires_at = None
    run.save(update_fields=["status", "stop_reason", "lease_owner", "lease_expires_at"])
    with translation.override(settings.LANGUAGE_CODE):
        message = _(
            "The server working on this answer stopped. Nothing is lost: resume the answer to continue "
            "from where it was."
        )
    event_append(
        run=run,
        channel="error",
        data={"code": INTERRUPTED_CODE, "message": message, "resumable": True},
    )
    return True


def run_resume_claim(
    *, run_id: uuid.UUID, owner: str, from_statuses: Iterable[str] = (RunStatus.INTERRUPTED,)
) -> bool:
    """Take a run that holds no process back to ``running`` under ``owner``'s lease, to resume it.

    False when the run is not in one of ``from_statuses`` (someone else resumed or finished it);
    :class:`~agents.services.RunRefused` (``run_active``) when its conversation has another active run.
    """
    try:
        with transaction.atomic():
            claimed = Run.objects.filter(pk=run_id, status__in=list(from_statuses)).update(
                status=RunStatus.RUNNING,
                lease_owner=owner,
                lease_expires_at=_lease_until(),
                parked_on=None,
                stop_reason="",
                finished_at=None,
                resumes=F("resumes") + 1,
            )
    except IntegrityError as exc:
        raise RunRefused("run_active", _("The agent is already answering in this conversation.")) from exc
    return bool(claimed)
