"""Celery tasks of memories, the only module of the package that knows Celery: the sweeper (beat, every
``MEMORY_SWEEP_SECONDS``) that applies the organisations' retention (:mod:`agents.memory.retention`)."""

from __future__ import annotations

import logging

from celery import shared_task

from agents.memory.retention import memories_sweep

logger = logging.getLogger(__name__)


@shared_task(name="agents.memory.tasks.sweep_memories", acks_late=True)
def sweep_memories() -> dict[str, int]:
    """Delete the memories past their organisation's retention. Idempotent: a second run finds nothing."""
    expired = memories_sweep()
    if expired:
        logger.info("memories: %d past their organisation's retention deleted", expired)
    return {"expired": expired}
