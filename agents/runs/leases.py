"""Leases of running runs: which process holds a run, the one renewal, and the fence.

A ``running`` run belongs to the process named by ``Run.lease_owner`` until ``lease_expires_at``. That
process renews the lease with every batch of events it writes (the event sink is fenced by it: a batch
whose renewal matches nothing is dropped) and, for quiet runs (a slow model, a human decision), every
``RUN_LEASE_RENEW_SECONDS``; both go through :func:`leases_renew` (on PostgreSQL the event writer's one
statement renews inside it, :func:`agents.runs.events.sql.batch_write_fenced`). A process that dies
(``kill -9``, a lost machine) stops renewing: its runs' leases lapse (:func:`lapsed`) and the sweeper
interrupts them (:func:`agents.runs.lifecycle.runs_interrupt_lapsed`). With the defaults (15 s lease,
10 s sweep) that happens within 25 s of the crash.

This module only owns, renews and fences leases; every change of a run's status is in
:mod:`agents.runs.lifecycle`.
"""

from __future__ import annotations

import os
import secrets
import socket
import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from agents.models import Run, RunStatus
from agents.runs import addressed
from agents.sql import column, prep, table

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


def lease_until(now: datetime | None = None, *, seconds: float | None = None) -> datetime:
    """When a lease taken or renewed ``now`` expires."""
    return (now or timezone.now()) + timedelta(seconds=lease_seconds() if seconds is None else seconds)


def run_lease_take(*, run_id: uuid.UUID, owner: str) -> bool:
    """Hold a running run that no process holds yet (or this one already does); False otherwise."""
    held = addressed.runs().filter(pk=run_id, status=RunStatus.RUNNING, lease_owner__in=("", owner))
    return bool(held.update(lease_owner=owner, lease_expires_at=lease_until()))


def leases_renew(leases: Iterable[tuple[uuid.UUID, str]], until: datetime | None = None) -> set[uuid.UUID]:
    """Extend the lease of every ``(run_id, owner)`` still running under that owner (to ``until``,
    default a full lease from now); returns the runs still held (the others were taken from their owner).

    The fence: one UPDATE that locks those runs' rows until the transaction ends, which orders an event
    batch against the sweeper.
    """
    leases = list(leases)
    if not leases:
        return set()
    pk, owner = column(Run, "id"), column(Run, "lease_owner")
    held = " OR ".join([f"({pk} = %s AND {owner} = %s)"] * len(leases))
    which = f"{column(Run, 'status')} = %s AND ({held})"
    if connection.vendor == "postgresql":
        # Rows locked in id order, as the event writer's batch locks them: two statements that lock
        # overlapping runs in different orders would deadlock.
        which = f"{pk} IN (SELECT {pk} FROM {table(Run)} WHERE {which} ORDER BY {pk} FOR UPDATE)"
    sql = f"UPDATE {table(Run)} SET {column(Run, 'lease_expires_at')} = %s WHERE {which} RETURNING {pk}"
    params: list[Any] = [prep(Run, "lease_expires_at", until or lease_until()), RunStatus.RUNNING]
    for run_id, lease_owner in leases:
        params += (prep(Run, "id", run_id), lease_owner)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {Run._meta.pk.to_python(row[0]) for row in cursor.fetchall()}


def lapsed(now: datetime) -> Q:
    """Running runs matching this lost their process: their lease expired (or, never taken, would have)."""
    # A run that never got a lease (its process died between creating and starting it) lapses too.
    return Q(lease_expires_at__lt=now) | Q(
        lease_expires_at__isnull=True, started_at__lt=now - timedelta(seconds=lease_seconds())
    )
