"""Signals of the approval machinery, for apps above it (``agents`` resumes parked runs on them)."""

from __future__ import annotations

from django.dispatch import Signal

#: Sent after the transaction that closed an approval request commits (approved, rejected, expired or
#: cancelled), with ``approval_id``, ``run_id`` (or ``None``) and ``status``.
approval_closed = Signal()
