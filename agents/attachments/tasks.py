"""Celery tasks of chat attachments, the only module of the package that knows Celery: the sweeper (beat,
every ``ATTACHMENT_SWEEP_SECONDS``) that applies the retention rules (:mod:`agents.attachments.retention`)."""

from __future__ import annotations

import logging

from celery import shared_task

from agents.attachments.retention import attachments_sweep

logger = logging.getLogger(__name__)


@shared_task(name="agents.attachments.tasks.sweep_attachments", acks_late=True)
def sweep_attachments() -> dict[str, int]:
    """Delete the attachments that are due, with their files. Idempotent: a second run finds nothing."""
    report = attachments_sweep()
    if report.never_sent or report.expired or report.orphaned:
        logger.info(
            "chat attachments: %d never sent, %d past their organisation's retention, %d orphaned deleted",
            report.never_sent,
            report.expired,
            report.orphaned,
        )
    return {"never_sent": report.never_sent, "expired": report.expired, "orphaned": report.orphaned}
