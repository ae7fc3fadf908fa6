"""Running a run to its end inside a Celery worker (``asyncio.run`` around a run manager of its own)."""

from __future__ import annotations

import asyncio
import uuid

from agents.runs.manager import RunManager


async def _run(run_id: uuid.UUID, owner: str) -> None:
    # Its own manager: the loop is this task's, and a worker never waits for a human (hold 0: a new
    # approval parks the run again at once).
    manager = RunManager(approval_hold=0.0)
    try:
        await manager.launch(run_id, resume=True, owner=owner)
        await manager.wait(run_id)
    finally:
        await manager.shutdown()


def run_in_worker(run_id: uuid.UUID, *, owner: str) -> None:
    """Resume ``run_id`` (claimed for ``owner``) and return when it has ended or parked."""
    asyncio.run(_run(run_id, owner))
