"""Runs as the run machinery addresses them: by id, across organisations.

A run's workers (the process that streams it, the Celery task that resumes it, the sweeper) are handed
its id by the platform itself (a lease, a signal, a queued task), never
by a user, and the id alone names the row. Everything a user asks for is scoped to their organisation
before it reaches here (:mod:`agents.conversations`), so these reads are the deliberate exception to
``OrgOwnedQuerySet`` failing closed. Approval requests the runs park on: :mod:`hooks.addressed`.
"""

from __future__ import annotations

from django.db.models import QuerySet

from agents.models import Run


def runs() -> QuerySet[Run]:
    """Every run, to be narrowed by its id (or, for the sweeper, by its lease)."""
    return Run.objects.unscoped()
