"""Signals of the approval machinery, for apps above it (``agents`` wakes the run waiting on a request)."""

from __future__ import annotations

from django.dispatch import Signal

#: Sent after the transaction that closed an approval request commits (approved, rejected, expired or
#: cancelled), with ``approval_id``, ``run_id`` (or ``None``) and ``status``.
approval_closed = Signal()

#: Sent after the transaction that queued an approval's Feishu card (``change="send"``) or changed the
#: status of a request whose card went out (``change="update"``) commits, with ``approval_id``:
#: ``hooks.tasks`` queues the delivery, so the services need not import the Celery tasks.
approval_card_due = Signal()
