"""The attachments' retention: what the sweeper (a Celery beat task, :mod:`agents.attachments.tasks`)
deletes, with their files.

- uploads never sent with a message, ``ATTACHMENT_PENDING_HOURS`` after they were uploaded;
- in an organisation with a retention period (``Organization.attachment_retention_days``), every
  attachment that many days after it was uploaded, even from a conversation still kept;
- orphans: attachments whose conversation was deleted by a cascade (an operator deleting a user in the
  admin), which nobody can see any more.

Each deletion writes its audit row (``attachment.delete``, with the reason) and the files are deleted once
each batch commits.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import QuerySet
from django.utils import timezone

from agents.attachments.limits import attachment_limits
from agents.attachments.models import Attachment
from agents.attachments.services import DeletionReason, attachments_delete_rows
from platform_core.models import Organization

BATCH = 500


@dataclass(frozen=True, slots=True)
class SweepReport:
    never_sent: int = 0
    expired: int = 0
    orphaned: int = 0


def attachments_sweep(*, now: datetime | None = None) -> SweepReport:
    """Delete what the retention rules above say is due at ``now`` (default: the present)."""
    now = now or timezone.now()
    # The sweeper's queries span organisations: it is the one job that deletes everyone's due files.
    everyone = Attachment.objects.unscoped()
    orphaned = _delete_all(
        everyone.filter(bound_at__isnull=False, conversation__isnull=True), DeletionReason.ORPHANED
    )
    pending_cutoff = now - timedelta(hours=attachment_limits().pending_hours)
    never_sent = _delete_all(
        everyone.filter(bound_at__isnull=True, conversation__isnull=True, created_at__lt=pending_cutoff),
        DeletionReason.NEVER_SENT,
    )
    expired = 0
    retained = Organization.objects.filter(attachment_retention_days__isnull=False).values_list(
        "pk", "attachment_retention_days"
    )
    for organization_id, days in retained:
        if not days:
            continue
        cutoff = now - timedelta(days=days)
        expired += _delete_all(
            Attachment.objects.for_org(organization_id).filter(created_at__lt=cutoff),
            DeletionReason.RETENTION,
        )
    return SweepReport(never_sent=never_sent, expired=expired, orphaned=orphaned)


def _delete_all(queryset: QuerySet[Attachment], reason: str) -> int:
    deleted = 0
    while True:
        rows = list(queryset.select_related("organization").order_by("created_at", "pk")[:BATCH])
        if not rows:
            return deleted
        attachments_delete_rows(rows, actor=None, reason=reason)
        deleted += len(rows)
