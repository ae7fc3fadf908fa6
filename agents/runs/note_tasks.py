"""The Celery task noting memories after a run's answer (:mod:`agents.runs.memory_notes`), and its
queueing by the run manager once the run's end is recorded. A module of its own: the manager imports it,
and :mod:`agents.runs.tasks` (which imports the manager through the worker) registers it."""

from __future__ import annotations

import logging
import uuid

from celery import shared_task

from agents.runs.memory_notes import NotesTaken, memory_notes_take, memory_notes_wanted

logger = logging.getLogger(__name__)


def memory_notes_queue(run_id: uuid.UUID | str) -> None:
    """Queue the noting of memories after a run's answer, when its agent does that (sync: one query; a
    broker that is down is logged, and the notes of that answer are not taken)."""
    if not memory_notes_wanted(uuid.UUID(str(run_id))):
        return
    try:
        note_memories.delay(str(run_id))
    except Exception:
        logger.exception("could not queue the memory notes of run %s", run_id)


@shared_task(name="agents.runs.tasks.note_memories", acks_late=True)
def note_memories(run_id: str) -> str:
    """Note the person's memories the run's exchange holds."""
    outcome = memory_notes_take(uuid.UUID(run_id))
    if isinstance(outcome, NotesTaken):
        return f"kept {len(outcome.kept)} memories"
    logger.info("memory notes of run %s: %s", run_id, outcome.reason)
    return outcome.reason
