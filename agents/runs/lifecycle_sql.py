"""The statements of a run's end in plain SQL, for :func:`agents.runs.lifecycle.run_finish`.

Every run ends in the event writer's transaction that stores its ``done`` event: on PostgreSQL one
statement instead of the ORM's seven (the run's row, its answer and summary as messages, the
conversation's ``updated_at``, its checkpoints dropped); elsewhere the same as four.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import connection, transaction

from agents.engine.strict_json import text_safe
from agents.models import Conversation, Message, Run, RunCheckpoint, RunStatus
from agents.sql import binary_cursor, column, prep, rows_insert, table

_MESSAGE_COLUMNS = ("conversation", "run", "role", "content", "pinned", "injected", "created_at")


def _fenced_where(run_id: uuid.UUID, lease_owner: str | None) -> tuple[str, list[Any]]:
    # Only a running run finishes (agents.runs.lifecycle); with an owner, only under that owner's lease.
    where = f"{column(Run, 'id')} = %s AND {column(Run, 'status')} = %s"
    params: list[Any] = [prep(Run, "id", run_id), RunStatus.RUNNING]
    if lease_owner is not None:
        where += f" AND {column(Run, 'lease_owner')} = %s"
        params.append(lease_owner)
    return where, params


def run_end_update(run_id: uuid.UUID, ended: dict[str, Any], lease_owner: str | None) -> uuid.UUID | None:
    """Set ``ended`` (model field names to values) on the run's row; with ``lease_owner``, only if that
    process still holds the running run (without, only if it is running). Returns the run's conversation id, ``None`` when nothing changed.

    One statement: the row lock the UPDATE takes orders it against the sweeper, as ``SELECT ... FOR
    UPDATE`` followed by an UPDATE did in two."""
    sets = ", ".join(f"{column(Run, name)} = %s" for name in ended)
    params = [prep(Run, name, value) for name, value in ended.items()]
    where, where_params = _fenced_where(run_id, lease_owner)
    sql = f"UPDATE {table(Run)} SET {sets} WHERE {where} RETURNING {column(Run, 'conversation')}"
    with connection.cursor() as cursor:
        cursor.execute(sql, params + where_params)
        row = cursor.fetchone()
    return None if row is None else Conversation._meta.pk.to_python(row[0])


def messages_insert(
    rows: Sequence[tuple[uuid.UUID, uuid.UUID, str, str, bool]], created_at: datetime
) -> None:
    """INSERT ``(conversation_id, run_id, role, content, pinned)`` as ``Message`` rows (not injected)."""
    rows_insert(Message, _MESSAGE_COLUMNS, [(*row, False, created_at) for row in rows])


def conversation_touch(conversation_id: uuid.UUID, now: datetime) -> None:
    """Set the conversation's ``updated_at`` (the list of conversations is ordered by it)."""
    sql = (
        f"UPDATE {table(Conversation)} "
        f"SET {column(Conversation, 'updated_at')} = %s WHERE {column(Conversation, 'id')} = %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            sql, [prep(Conversation, "updated_at", now), prep(Conversation, "id", conversation_id)]
        )


def run_checkpoints_delete(run_id: uuid.UUID) -> None:
    """Drop every checkpoint of a run (a closed run never resumes; ``Run.checkpoint`` keeps its last state)."""
    sql = f"DELETE FROM {table(RunCheckpoint)} WHERE {column(RunCheckpoint, 'run')} = %s"
    with connection.cursor() as cursor:
        cursor.execute(sql, [prep(RunCheckpoint, "run", run_id)])


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
    conversation = table(Conversation)
    sets = ", ".join(f"{column(Run, name)} = %s" for name in ended)
    params: list[Any] = [prep(Run, name, value) for name, value in ended.items()]
    where, where_params = _fenced_where(run_id, lease_owner)
    params += where_params
    message_cols = ", ".join(column(Message, name) for name in _MESSAGE_COLUMNS)
    sql = (
        f"WITH r AS (UPDATE {table(Run)} SET {sets} WHERE {where} RETURNING {column(Run, 'conversation')} AS c), "
        f"m AS (INSERT INTO {table(Message)} ({message_cols}) "
        f"SELECT r.c, %s::uuid, x.role, x.content, x.pinned, false, %s::timestamptz "
        f"FROM r, unnest(%s::varchar[], %s::text[], %s::boolean[]) WITH ORDINALITY AS x(role, content, pinned, n) "
        f"ORDER BY x.n), "
        f"t AS (UPDATE {conversation} SET {column(Conversation, 'updated_at')} = %s FROM r "
        f"WHERE {conversation}.{column(Conversation, 'id')} = r.c), "
        f"k AS (DELETE FROM {table(RunCheckpoint)} "
        f"WHERE {column(RunCheckpoint, 'run')} = %s AND EXISTS (SELECT 1 FROM r)) "
        f"SELECT count(*) FROM r"
    )
    stamp = prep(Message, "created_at", now)
    params += [
        prep(Message, "run", run_id),
        stamp,
        [role for role, _content, _pinned in messages],
        [text_safe(content) for _role, content, _pinned in messages],
        [pinned for _role, _content, pinned in messages],
        prep(Conversation, "updated_at", now),
        prep(RunCheckpoint, "run", run_id),
    ]
    with binary_cursor() as cursor:  # the answer and the arrays bound in binary: see agents.sql.binary_cursor
        cursor.execute(sql.replace("%s", "%b"), params)
        return bool(cursor.fetchone()[0])
