"""The event writer's hot statements in plain SQL: the INSERT of events and checkpoints, the run's
latest checkpoint, and the one statement that writes several runs' fenced batches on PostgreSQL.

Every batch of every run goes through them, many times a second per streaming run, so they are plain
SQL (:mod:`agents.sql`) rather than ORM statements compiled anew each time. The fence itself (the
lease renewal of a batch) is :func:`agents.runs.leases.leases_renew`; a run's end is
:mod:`agents.runs.lifecycle_sql`.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import DataError, connection

from agents.models import Run, RunCheckpoint, RunEvent, RunStatus
from agents.runs.events.texts import EventTexts, event_texts
from agents.sql import binary_cursor, column, prep, rows_insert, table
from agents.usage.models import UsageRecord
from agents.usage.rows import USAGE_COLUMNS, USAGE_PG_TYPES, PendingUsage


@dataclass(slots=True)
class PendingEvent:
    """One event of a run, queued for the writer (the columns of a ``RunEvent`` row)."""

    conversation_id: uuid.UUID
    run_id: uuid.UUID
    seq: int
    event: str
    data: dict[str, Any]
    _texts: EventTexts | None = field(default=None, init=False, repr=False, compare=False)

    def frame(self) -> dict[str, object]:
        """The websocket frame of DESIGN section 4 (as ``RunEvent.frame``)."""
        return {"seq": self.seq, "run_id": str(self.run_id), "event": self.event, "data": self.data}

    def texts(self) -> EventTexts:
        """The stored data and the frame as text, encoded on the first call (by the writer, once the
        event left the queue where answer deltas still join it) and shared by the INSERT and the
        publisher."""
        if self._texts is None:
            self._texts = event_texts(self.seq, self.run_id, self.event, self.data)
        return self._texts


_EVENT_COLUMNS = ("conversation", "run", "seq", "event", "data", "created_at")
_CHECKPOINT_COLUMNS = ("run", "seq", "data", "created_at")


def events_insert(events: Sequence[PendingEvent], created_at: datetime) -> None:
    """INSERT ``events`` as ``RunEvent`` rows (the conversation's unique ``seq`` refuses a duplicate)."""
    rows_insert(
        RunEvent,
        _EVENT_COLUMNS,
        [(e.conversation_id, e.run_id, e.seq, e.event, e.texts().stored, created_at) for e in events],
    )


def usage_insert(rows: Sequence[PendingUsage], created_at: datetime) -> None:
    """INSERT ``rows`` as ``UsageRecord`` rows (one per model call)."""
    if rows:
        rows_insert(UsageRecord, USAGE_COLUMNS, [(*row.values(), created_at) for row in rows])


def checkpoints_insert(rows: Sequence[tuple[uuid.UUID, int, dict[str, Any]]], created_at: datetime) -> None:
    """INSERT ``(run_id, seq, data)`` as ``RunCheckpoint`` rows."""
    rows_insert(RunCheckpoint, _CHECKPOINT_COLUMNS, [(*row, created_at) for row in rows])


def run_checkpoint_set(run_id: uuid.UUID, state: dict[str, Any], seq: int) -> None:
    """Keep the run's latest checkpoint state on its row."""
    sql = (
        f"UPDATE {table(Run)} SET {column(Run, 'checkpoint')} = %s, "
        f"{column(Run, 'checkpoint_seq')} = %s WHERE {column(Run, 'id')} = %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [prep(Run, "checkpoint", state), seq, prep(Run, "id", run_id)])


@dataclass(slots=True)
class FencedBatch:
    """One run's part of a write, for :func:`batch_write_fenced`."""

    run_id: uuid.UUID
    owner: str
    lease_until: datetime
    events: Sequence[PendingEvent]
    # (seq, data) of the checkpoints to store; ``prune_before``: drop the run's older rows (a reset).
    checkpoints: Sequence[tuple[int, dict[str, Any]]]
    prune_before: int | None = None
    # The state and seq of the run's latest checkpoint, kept on its row.
    latest: tuple[dict[str, Any], int] | None = None
    # The run's model calls since the last batch, one ``UsageRecord`` each.
    usage: Sequence[PendingUsage] = ()


class FenceBroken(Exception):
    """A lease of the batch is gone: the statement wrote nothing."""


@functools.cache
def _batch_sql() -> str:
    """The text of :func:`batch_write_fenced`'s statement (the same for every batch: built once), its
    parameters bound in binary (:func:`agents.sql.binary_cursor`)."""
    run, pk = table(Run), column(Run, "id")
    event_cols = ", ".join(column(RunEvent, name) for name in _EVENT_COLUMNS)
    checkpoint_cols = ", ".join(column(RunCheckpoint, name) for name in _CHECKPOINT_COLUMNS)
    checkpoint_table = table(RunCheckpoint)
    ck_run, ck_seq = column(RunCheckpoint, "run"), column(RunCheckpoint, "seq")
    checkpoint, checkpoint_seq = column(Run, "checkpoint"), column(Run, "checkpoint_seq")
    usage_cols = ", ".join(column(UsageRecord, name) for name in USAGE_COLUMNS)
    usage_arrays = ", ".join(f"%s::{kind}[]" for kind in USAGE_PG_TYPES)
    sql = (
        f"WITH d(id, owner, until, state, seq) AS ("
        f"SELECT * FROM unnest(%s::uuid[], %s::varchar[], %s::timestamptz[], %s::jsonb[], %s::integer[])), "
        # The runs' rows are locked in id order first, as leases_renew locks them: two statements that
        # lock overlapping runs in different orders would deadlock.
        f"locked AS (SELECT r.{pk} FROM {run} r JOIN d ON r.{pk} = d.id "
        f"WHERE r.{column(Run, 'lease_owner')} = d.owner AND r.{column(Run, 'status')} = %s "
        f"ORDER BY r.{pk} FOR UPDATE OF r), "
        f"lease AS (UPDATE {run} r SET {column(Run, 'lease_expires_at')} = d.until, "
        f"{checkpoint} = COALESCE(d.state, r.{checkpoint}), {checkpoint_seq} = COALESCE(d.seq, r.{checkpoint_seq}) "
        f"FROM d JOIN locked l ON l.{pk} = d.id WHERE r.{pk} = l.{pk} RETURNING 1), "
        f"ev AS (INSERT INTO {table(RunEvent)} ({event_cols}) "
        f"SELECT * FROM unnest(%s::uuid[], %s::uuid[], %s::integer[], %s::varchar[], %s::jsonb[], "
        f"%s::timestamptz[])), "
        f"ck AS (INSERT INTO {checkpoint_table} ({checkpoint_cols}) "
        f"SELECT * FROM unnest(%s::uuid[], %s::integer[], %s::jsonb[], %s::timestamptz[])), "
        f"pruned AS (DELETE FROM {checkpoint_table} c USING unnest(%s::uuid[], %s::integer[]) AS x(run, seq) "
        f"WHERE c.{ck_run} = x.run AND c.{ck_seq} < x.seq), "
        f"us AS (INSERT INTO {table(UsageRecord)} ({usage_cols}) SELECT * FROM unnest({usage_arrays})) "
        f"SELECT 1 / (CASE WHEN count(*) = %s THEN 1 ELSE 0 END) FROM lease"
    )
    return sql.replace("%s", "%b")


def batch_write_fenced(parts: Sequence[FencedBatch], created_at: datetime) -> None:
    """Write the batches of several runs in ONE statement (PostgreSQL): renew every lease (keeping each
    run's latest checkpoint on its row in the same UPDATE), INSERT the events and checkpoints, prune the
    checkpoints a reset superseded. Raises :class:`FenceBroken`, with nothing written, when any lease is
    gone.

    One statement is one round trip and, outside a transaction, one commit. The writer's thread waits
    for the interpreter's lock after every round trip (the event loop's thread is busy beside it): at 200
    conversations the five to eight round trips of a transaction cost 15-40 ms per batch. The fence is
    asserted inside the statement: when fewer leases are renewed than asked, it divides by zero, so
    PostgreSQL aborts the whole statement (a statement is atomic) and nothing of it remains.
    """
    events = [e for part in parts for e in part.events]
    checkpoints = [(part.run_id, seq, data) for part in parts for seq, data in part.checkpoints]
    pruned = [part for part in parts if part.prune_before is not None]
    params: list[Any] = [
        [prep(Run, "id", p.run_id) for p in parts],
        [p.owner for p in parts],
        [prep(Run, "lease_expires_at", p.lease_until) for p in parts],
        [prep(Run, "checkpoint", p.latest[0]) if p.latest else None for p in parts],
        [p.latest[1] if p.latest else None for p in parts],
        RunStatus.RUNNING,
        _prepped_once(RunEvent, "conversation", [e.conversation_id for e in events]),
        _prepped_once(RunEvent, "run", [e.run_id for e in events]),
        [e.seq for e in events],
        [e.event for e in events],
        events_data_params(events),
        [prep(RunEvent, "created_at", created_at)] * len(events),
        [prep(RunCheckpoint, "run", run_id) for run_id, _seq, _data in checkpoints],
        [seq for _run_id, seq, _data in checkpoints],
        [prep(RunCheckpoint, "data", data) for _run_id, _seq, data in checkpoints],
        [prep(RunCheckpoint, "created_at", created_at)] * len(checkpoints),
        [prep(RunCheckpoint, "run", p.run_id) for p in pruned],
        [p.prune_before for p in pruned],
        *_usage_arrays([row for part in parts for row in part.usage], created_at),
        len(parts),
    ]
    try:
        with binary_cursor() as cursor:  # the arrays bound in binary: see agents.sql.binary_cursor
            cursor.execute(_batch_sql(), params)
    except DataError as exc:
        if getattr(getattr(exc, "__cause__", None), "sqlstate", None) == "22012":  # division_by_zero
            raise FenceBroken from exc
        raise


def events_data_params(events: Sequence[PendingEvent]) -> list[Any]:
    """The events' ``data`` for PostgreSQL's jsonb array: the text each event was encoded to once
    (:meth:`PendingEvent.texts`), sent as it is."""
    from psycopg.types.json import Jsonb  # PostgreSQL only, like the statement

    return [Jsonb(e.texts().stored, dumps=str) for e in events]


def _prepped_once(model: Any, name: str, values: Sequence[Any]) -> list[Any]:
    """``values`` prepared for ``model``'s field ``name``, each distinct value once (a batch's events
    share a few runs and conversations)."""
    prepped: dict[Any, Any] = {}
    out = []
    for value in values:
        if value not in prepped:
            prepped[value] = prep(model, name, value)
        out.append(prepped[value])
    return out


def _usage_arrays(rows: Sequence[PendingUsage], created_at: datetime) -> list[list[Any]]:
    """The columns of ``rows`` as one array each (the statement's ``unnest``), values prepared by their
    fields."""
    values = [(*row.values(), created_at) for row in rows]
    return [[prep(UsageRecord, name, row[i]) for row in values] for i, name in enumerate(USAGE_COLUMNS)]
