"""The memories' retention: in an organisation with a retention period
(``Organization.memory_retention_days``), every memory that many days after it was last written or
changed is deleted by the sweeper (a Celery beat task, :mod:`agents.memory.tasks`), each with its audit
row (``memory.deleted``, reason ``retention``, without the text)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone

from agents.memory.models import Memory
from agents.memory.services import memory_delete
from platform_core.models import Organization

BATCH = 500


def memories_sweep(*, now: datetime | None = None) -> int:
    """Delete the memories past their organisation's retention at ``now`` (default: the present); returns
    how many."""
    now = now or timezone.now()
    deleted = 0
    retained = Organization.objects.filter(memory_retention_days__isnull=False).values_list(
        "pk", "memory_retention_days"
    )
    for organization_id, days in retained:
        if not days:
            continue
        due = Memory.objects.for_org(organization_id).filter(updated_at__lt=now - timedelta(days=days))
        while batch := list(due.order_by("updated_at", "pk")[:BATCH]):
            for memory in batch:
                memory_delete(memory=memory, actor=None, reason="retention")
            deleted += len(batch)
    return deleted
