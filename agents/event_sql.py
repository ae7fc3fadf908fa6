"""The event writer's hot statements in plain SQL: the fenced lease renewal, the INSERT of events and
checkpoints, the run's latest checkpoint, and the statements of a run's end (recorded in the writer's
transaction that stores its ``done`` event).

Every batch of every run goes through the first two, many times a second per streaming run. Through the ORM each
one was compiled anew (a ``Q`` tree of one term per run, a model instance per event, ``bulk_create``'s
per-object bookkeeping): at 200 conversations that compilation was the largest share of the process's
database CPU. Here the SQL is a string built once per batch and the values go through each field's own
``get_db_prep_value``, so PostgreSQL and SQLite get what the ORM would have sent, except that a value
neither stores (NaN, NUL, a lone surrogate) is sent in a safe, spelled-out form instead of failing the
batch (:func:`_prep_field`).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import DataError, connection, models, transaction

from agents.engine.strict_json import dumps_storable, text_safe
from agents.models import Conversation, Message, Run, RunCheckpoint, RunEvent, RunStatus


@dataclass(slots=True)
class PendingEvent:
    """One event of a run, queued for the writer (the columns of a ``RunEvent`` row)."""

    conversation_id: uuid.UUID
    run_id: uuid.UUID
    seq: int
    event: str
    data: dict[str, Any]

    def frame(self) -> dict[str, object]:
        """The websocket frame of DESIGN section 4 (as ``RunEvent.frame``)."""
        return {"seq": self.seq, "run_id": str(self.run_id), "event": self.event, "data": self.data}


def _column(model: Any, name: str) -> str:
    return connection.ops.quote_name(model._meta.get_field(name).column)


def _prep(model: Any, name: str, value: Any) -> Any:
    return _prep_field(model._meta.get_field(name), value)


def _prep_field(field: Any, value: Any) -> Any:
    """``value`` as the ORM would send it to ``field``, but always storable: a JSON column gets the text
    of :func:`~agents.engine.strict_json.dumps_storable` (NaN, NUL and lone surrogates spelled out, where
    ``json.dumps`` would send what both backends refuse), a text column loses NUL and lone surrogates.
    A run's events and checkpoints carry model output and tool results: none of it may make a batch fail.
    """
    if isinstance(field, models.JSONField):
        if connection.vendor == "postgresql":
            from psycopg.types.json import Jsonb  # the adapter Django's own JSONField sends

            return Jsonb(value, dumps=dumps_storable)
        return dumps_storable(value)
    if isinstance(value, str):
        value = text_safe(value)
    return field.get_db_prep_value(value, connection, prepared=False)


def leases_renew_fenced(leases: Sequence[tuple[uuid.UUID, str]], until: datetime) -> int:
    """Extend the lease of every ``(run_id, owner)`` still running under that owner to ``until``;
    returns how many were (fewer than asked means some lease is gone). Locks those runs' rows until the
    transaction ends, which orders the batch against the sweeper."""
    if not leases:
        return 0
    pk, owner = _column(Run, "id"), _column(Run, "lease_owner")
    held = " OR ".join([f"({pk} = %s AND {owner} = %s)"] * len(leases))
    sql = (
        f"UPDATE {connection.ops.quote_name(Run._meta.db_table)} SET {_column(Run, 'lease_expires_at')} = %s "
        f"WHERE {_column(Run, 'status')} = %s AND ({held})"
    )
    params: list[Any] = [_prep(Run, "lease_expires_at", until), RunStatus.RUNNING]
    for run_id, lease_owner in leases:
        params += (_prep(Run, "id", run_id), lease_owner)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def rows_insert(model: Any, names: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """INSERT ``rows`` of ``model`` (each a tuple of Python values in ``names`` order, prepared by the
    field they go to). No signals are sent and no defaults are applied: every column without a
    database default must be named.

    On PostgreSQL one statement of constant text takes one array per column (``unnest``), so the
    driver parses it once per process, not once per batch size; elsewhere, multi-row ``VALUES`` in as
    few statements as the database's parameter limit allows.
    """
    if not rows:
        return
    fields = [model._meta.get_field(name) for name in names]
    table = connection.ops.quote_name(model._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            arrays = ", ".join(f"%s::{f.db_type(connection)}[]" for f in fields)
            params = [[_prep_field(field, row[i]) for row in rows] for i, field in enumerate(fields)]
            cursor.execute(f"INSERT INTO {table} ({columns}) SELECT * FROM unnest({arrays})", params)
            return
        row_sql = "(" + ", ".join(["%s"] * len(fields)) + ")"
        per_statement = max(1, (connection.features.max_query_params or 60000) // len(fields))
        for start in range(0, len(rows), per_statement):
            chunk = rows[start : start + per_statement]
            params = [
                _prep_field(field, value) for row in chunk for field, value in zip(fields, row, strict=True)
            ]
            cursor.execute(
                f"INSERT INTO {table} ({columns}) VALUES {', '.join([row_sql] * len(chunk))}", params
            )


_EVENT_COLUMNS = ("conversation", "run", "seq", "event", "data", "created_at")
_CHECKPOINT_COLUMNS = ("run", "seq", "data", "created_at")


def events_insert(events: Sequence[PendingEvent], created_at: datetime) -> None:
    """INSERT ``events`` as ``RunEvent`` rows (the conversation's unique ``seq`` refuses a duplicate)."""
    rows_insert(
        RunEvent,
        _EVENT_COLUMNS,
        [(e.conversation_id, e.run_id, e.seq, e.event, e.data, created_at) for e in events],
    )


def checkpoints_insert(rows: Sequence[tuple[uuid.UUID, int, dict[str, Any]]], created_at: datetime) -> None:
    """INSERT ``(run_id, seq, data)`` as ``RunCheckpoint`` rows."""
    rows_insert(RunCheckpoint, _CHECKPOINT_COLUMNS, [(*row, created_at) for row in rows])


def run_checkpoint_set(run_id: uuid.UUID, state: dict[str, Any], seq: int) -> None:
    """Keep the run's latest checkpoint state on its row."""
    sql = (
        f"UPDATE {connection.ops.quote_name(Run._meta.db_table)} SET {_column(Run, 'checkpoint')} = %s, "
        f"{_column(Run, 'checkpoint_seq')} = %s WHERE {_column(Run, 'id')} = %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [_prep(Run, "checkpoint", state), seq, _prep(Run, "id", run_id)])


def run_end_update(run_id: uuid.UUID, ended: dict[str, Any], lease_owner: str | None) -> uuid.UUID | None:
    """Set ``ended`` (model field names to values) on the run's row; with ``lease_owner``, only if that
    process still holds the running run. Returns the run's conversation id, ``None`` when nothing changed.

    One statement: the row lock the UPDATE takes orders it against the sweeper, as ``SELECT ... FOR
    UPDATE`` followed by an UPDATE did in two."""
    sets = ", ".join(f"{_column(Run, name)} = %s" for name in ended)
    params = [_prep(Run, name, value) for name, value in ended.items()]
    where = f"{_column(Run, 'id')} = %s"
    params.append(_prep(Run, "id", run_id))
    if lease_owner is not None:
        where += f" AND {_column(Run, 'status')} = %s AND {_column(Run, 'lease_owner')} = %s"
        params += [RunStatus.RUNNING, lease_owner]
    sql = (
        f"UPDATE {connection.ops.quote_name(Run._meta.db_table)} SET {sets} WHERE {where} "
        f"RETURNING {_column(Run, 'conversation')}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return None if row is None else Conversation._meta.pk.to_python(row[0])


_MESSAGE_COLUMNS = ("conversation", "run", "role", "content", "pinned", "injected", "created_at")


def messages_insert(
    rows: Sequence[tuple[uuid.UUID, uuid.UUID, str, str, bool]], created_at: datetime
) -> None:
    """INSERT ``(conversation_id, run_id, role, content, pinned)`` as ``Message`` rows (not injected)."""
    rows_insert(Message, _MESSAGE_COLUMNS, [(*row, False, created_at) for row in rows])


def conversation_touch(conversation_id: uuid.UUID, now: datetime) -> None:
    """Set the conversation's ``updated_at`` (the list of conversations is ordered by it)."""
    sql = (
        f"UPDATE {connection.ops.quote_name(Conversation._meta.db_table)} "
        f"SET {_column(Conversation, 'updated_at')} = %s WHERE {_column(Conversation, 'id')} = %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            sql, [_prep(Conversation, "updated_at", now), _prep(Conversation, "id", conversation_id)]
        )


def run_checkpoints_delete(run_id: uuid.UUID) -> None:
    """Drop every checkpoint of a run (a closed run never resumes; ``Run.checkpoint`` keeps its last state)."""
    sql = (
        f"DELETE FROM {connection.ops.quote_name(RunCheckpoint._meta.db_table)} "
        f"WHERE {_column(RunCheckpoint, 'run')} = %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [_prep(RunCheckpoint, "run", run_id)])


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


class FenceBroken(Exception):
    """A lease of the batch is gone: the statement wrote nothing."""


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
    run = connection.ops.quote_name(Run._meta.db_table)
    event_cols = ", ".join(_column(RunEvent, name) for name in _EVENT_COLUMNS)
    checkpoint_cols = ", ".join(_column(RunCheckpoint, name) for name in _CHECKPOINT_COLUMNS)
    checkpoint_table = connection.ops.quote_name(RunCheckpoint._meta.db_table)
    ck_run, ck_seq = _column(RunCheckpoint, "run"), _column(RunCheckpoint, "seq")
    checkpoint, checkpoint_seq = _column(Run, "checkpoint"), _column(Run, "checkpoint_seq")
    sql = (
        f"WITH d(id, owner, until, state, seq) AS ("
        f"SELECT * FROM unnest(%s::uuid[], %s::varchar[], %s::timestamptz[], %s::jsonb[], %s::integer[])), "
        f"lease AS (UPDATE {run} r SET {_column(Run, 'lease_expires_at')} = d.until, "
        f"{checkpoint} = COALESCE(d.state, r.{checkpoint}), {checkpoint_seq} = COALESCE(d.seq, r.{checkpoint_seq}) "
        f"FROM d WHERE r.{_column(Run, 'id')} = d.id AND r.{_column(Run, 'lease_owner')} = d.owner "
        f"AND r.{_column(Run, 'status')} = %s RETURNING 1), "
        f"ev AS (INSERT INTO {connection.ops.quote_name(RunEvent._meta.db_table)} ({event_cols}) "
        f"SELECT * FROM unnest(%s::uuid[], %s::uuid[], %s::integer[], %s::varchar[], %s::jsonb[], "
        f"%s::timestamptz[])), "
        f"ck AS (INSERT INTO {checkpoint_table} ({checkpoint_cols}) "
        f"SELECT * FROM unnest(%s::uuid[], %s::integer[], %s::jsonb[], %s::timestamptz[])), "
        f"pruned AS (DELETE FROM {checkpoint_table} c USING unnest(%s::uuid[], %s::integer[]) AS x(run, seq) "
        f"WHERE c.{ck_run} = x.run AND c.{ck_seq} < x.seq) "
        f"SELECT 1 / (CASE WHEN count(*) = %s THEN 1 ELSE 0 END) FROM lease"
    )
    events = [e for part in parts for e in part.events]
    checkpoints = [(part.run_id, seq, data) for part in parts for seq, data in part.checkpoints]
    pruned = [part for part in parts if part.prune_before is not None]
    params = [
        [_prep(Run, "id", p.run_id) for p in parts],
        [p.owner for p in parts],
        [_prep(Run, "lease_expires_at", p.lease_until) for p in parts],
        [_prep(Run, "checkpoint", p.latest[0]) if p.latest else None for p in parts],
        [p.latest[1] if p.latest else None for p in parts],
        RunStatus.RUNNING,
        [_prep(RunEvent, "conversation", e.conversation_id) for e in events],
        [_prep(RunEvent, "run", e.run_id) for e in events],
        [e.seq for e in events],
        [e.event for e in events],
        [_prep(RunEvent, "data", e.data) for e in events],
        [_prep(RunEvent, "created_at", created_at)] * len(events),
        [_prep(RunCheckpoint, "run", run_id) for run_id, _seq, _data in checkpoints],
        [seq for _run_id, seq, _data in checkpoints],
        [_prep(RunCheckpoint, "data", data) for _run_id, _seq, data in checkpoints],
        [_prep(RunCheckpoint, "created_at", created_at)] * len(checkpoints),
        [_prep(RunCheckpoint, "run", p.run_id) for p in pruned],
        [p.prune_before for p in pruned],
        len(parts),
    ]
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
    except DataError as exc:
        if getattr(getattr(exc, "__cause__", None), "sqlstate", None) == "22012":  # division_by_zero
            raise FenceBroken from exc
        raise


def run_end_write(
    run_id: uuid.UUID,
    ended: dict[str, Any],
    lease_owner: str | None,
    messages: Sequence[tuple[str, str, bool]],
    now: datetime,
) -> bool:
    """A run's end: ``ended`` on its row (with ``lease_owner``, only if that process still holds the
    running run), ``messages`` (role, content, pinned) added to its conversation, the conversation's
    ``updated_at`` set, its checkpoints dropped. Returns whether the run was closed.

    On PostgreSQL one statement (its parts keyed on the run's UPDATE, so nothing happens when it matches
    nothing); elsewhere the same as four.
    """
    if connection.vendor != "postgresql":
        with transaction.atomic():
            conversation_id = run_end_update(run_id, ended, lease_owner)
            if conversation_id is None:
                return False
            messages_insert([(conversation_id, run_id, *m) for m in messages], now)
            conversation_touch(conversation_id, now)
            run_checkpoints_delete(run_id)
            return True
    run = connection.ops.quote_name(Run._meta.db_table)
    conversation = connection.ops.quote_name(Conversation._meta.db_table)
    sets = ", ".join(f"{_column(Run, name)} = %s" for name in ended)
    params: list[Any] = [_prep(Run, name, value) for name, value in ended.items()]
    where = f"{_column(Run, 'id')} = %s"
    params.append(_prep(Run, "id", run_id))
    if lease_owner is not None:
        where += f" AND {_column(Run, 'status')} = %s AND {_column(Run, 'lease_owner')} = %s"
        params += [RunStatus.RUNNING, lease_owner]
    message_cols = ", ".join(_column(Message, name) for name in _MESSAGE_COLUMNS)
    sql = (
        f"WITH r AS (UPDATE {run} SET {sets} WHERE {where} RETURNING {_column(Run, 'conversation')} AS c), "
        f"m AS (INSERT INTO {connection.ops.quote_name(Message._meta.db_table)} ({message_cols}) "
        f"SELECT r.c, %s::uuid, x.role, x.content, x.pinned, false, %s::timestamptz "
        f"FROM r, unnest(%s::varchar[], %s::text[], %s::boolean[]) WITH ORDINALITY AS x(role, content, pinned, n) "
        f"ORDER BY x.n), "
        f"t AS (UPDATE {conversation} SET {_column(Conversation, 'updated_at')} = %s FROM r "
        f"WHERE {conversation}.{_column(Conversation, 'id')} = r.c), "
        f"k AS (DELETE FROM {connection.ops.quote_name(RunCheckpoint._meta.db_table)} "
        f"WHERE {_column(RunCheckpoint, 'run')} = %s AND EXISTS (SELECT 1 FROM r)) "
        f"SELECT count(*) FROM r"
    )
    stamp = _prep(Message, "created_at", now)
    params += [
        _prep(Message, "run", run_id),
        stamp,
        [role for role, _content, _pinned in messages],
        [text_safe(content) for _role, content, _pinned in messages],
        [pinned for _role, _content, pinned in messages],
        _prep(Conversation, "updated_at", now),
        _prep(RunCheckpoint, "run", run_id),
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return bool(cursor.fetchone()[0])
