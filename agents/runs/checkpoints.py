"""Durable runs on the database: loading a run's checkpoint, its unread follow-ups, and the tool ledger.

Checkpoints are written by the run's event sink (:mod:`agents.runs.events.store`), in the same transactions as
the events around them; this module reads them back when a run resumes, in whichever process.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from channels.db import database_sync_to_async
from django.utils import timezone

from agents.engine.durable.checkpoint import checkpoints_fold
from agents.engine.durable.ledger import RecordedCall
from agents.models import Message, MessageRole, RunCheckpoint, RunEvent, ToolCallEntry, ToolCallStatus
from agents.runs.events.store import EventSink

logger = logging.getLogger(__name__)


def run_checkpoint_load(*, run_id: uuid.UUID) -> dict[str, Any] | None:
    """The engine checkpoint of a run: its checkpoints folded in order (``None`` without any)."""
    rows = RunCheckpoint.objects.filter(run_id=run_id).order_by("seq").values_list("data", flat=True)
    return checkpoints_fold(rows.iterator(chunk_size=200))


def run_calls_announced(*, run_id: uuid.UUID, tool_call_ids: Sequence[str]) -> set[str]:
    """Which of these calls the chat was already shown starting (persisted ``step`` iteration start
    events): a resumed run does not announce them again."""
    if not tool_call_ids:
        return set()
    rows = RunEvent.objects.filter(
        run_id=run_id,
        event="step",
        data__type="iteration",
        data__status="start",
        data__tool_call_id__in=list(tool_call_ids),
    )
    return {str(data.get("tool_call_id")) for data in rows.values_list("data", flat=True)}


def run_follow_ups_unread(*, run_id: uuid.UUID, taken: int) -> list[tuple[int, str]]:
    """The follow-ups the user sent a run that its engine had not taken in yet (id, content), oldest
    first: every injected message after the first ``taken``."""
    rows = Message.objects.filter(run_id=run_id, role=MessageRole.USER, injected=True).order_by("id")
    return list(rows.values_list("id", "content")[taken:])


def _split(key: str) -> tuple[str, str]:
    run_id, _, tool_call_id = key.partition(":")
    return run_id, tool_call_id


class DatabaseToolLedger:
    """The engine's :class:`~agents.engine.durable.ToolCallLedger` on :class:`ToolCallEntry` rows.

    Both ride the batches of the run's event sink, so neither costs the run a transaction or a database
    hop of its own: ``begin`` is a durable write of the next batch, awaited until that batch has
    committed (the tool runs only then; a refused write means the call is not made), and ``finish`` joins
    the next batch without being waited for.
    """

    def __init__(self, sink: EventSink) -> None:
        self.sink = sink

    async def recorded(self, keys: Sequence[str], *, iteration: int) -> Mapping[str, RecordedCall]:
        return await database_sync_to_async(_recorded)(list(keys), iteration)

    async def begin(self, key: str, *, tool_name: str, args: Mapping[str, Any], iteration: int) -> None:
        await self.sink.write_durable(LedgerBegin(key, tool_name, iteration))

    async def finish(self, key: str, *, observation: str, error: str | None, outcome: str) -> None:
        self.sink.write_later(LedgerFinish(key, observation, error, outcome))


@dataclass(frozen=True, slots=True)
class LedgerBegin:
    """The run write of a tool call's ledger row before the call runs (durable: the call runs only once
    it has committed). One statement, no savepoint (it rides the event batch's transaction): a call id
    the model reused in a later turn is a new call (replays never begin again), so it takes over the
    earlier row."""

    key: str
    tool_name: str
    iteration: int

    def apply(self) -> None:
        run_id, tool_call_id = _split(self.key)
        fields = {
            "iteration": self.iteration,
            "tool_name": self.tool_name[:64],
            "status": ToolCallStatus.STARTED,
            "observation": "",
            "failed": False,
            "error": "",
            "outcome": "",
            "finished_at": None,
        }
        ToolCallEntry.objects.bulk_create(
            [ToolCallEntry(run_id=run_id, tool_call_id=tool_call_id[:128], **fields)],
            update_conflicts=True,
            unique_fields=["run", "tool_call_id"],
            update_fields=[*fields, "started_at"],
        )


@dataclass(frozen=True, slots=True)
class LedgerFinish:
    """The run write that marks a tool call's ledger row finished, with what the call gave the model."""

    key: str
    observation: str
    error: str | None
    outcome: str

    def apply(self) -> None:
        run_id, tool_call_id = _split(self.key)
        ToolCallEntry.objects.filter(run_id=run_id, tool_call_id=tool_call_id[:128]).update(
            status=ToolCallStatus.FINISHED,
            observation=self.observation,
            failed=self.error is not None,
            error=self.error or "",
            outcome=self.outcome[:16],
            finished_at=timezone.now(),
        )


def _recorded(keys: list[str], iteration: int) -> dict[str, RecordedCall]:
    by_call = {_split(key)[1][:128]: key for key in keys}
    run_ids = {_split(key)[0] for key in keys}
    rows = ToolCallEntry.objects.filter(
        run_id__in=run_ids, tool_call_id__in=list(by_call), iteration=iteration
    )
    found = {}
    for row in rows:
        finished = row.status == ToolCallStatus.FINISHED
        found[by_call[row.tool_call_id]] = RecordedCall(
            finished=finished,
            observation=row.observation,
            error=(row.error or "error") if row.failed else None,
            outcome=row.outcome or "ok",
        )
    return found
