"""The event writer's two hot statements, in plain SQL: the fenced lease renewal and the event INSERT.

Every batch of every run goes through them, many times a second per streaming run. Through the ORM each
one was compiled anew (a ``Q`` tree of one term per run, a model instance per event, ``bulk_create``'s
per-object bookkeeping): at 200 conversations that compilation was the largest share of the process's
database CPU. Here the SQL is a string built once per batch and the values go through each field's own
``get_db_prep_value``, so PostgreSQL and SQLite get exactly what the ORM would have sent.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection

from agents.models import Run, RunEvent, RunStatus


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
    return model._meta.get_field(name).get_db_prep_value(value, connection, prepared=False)


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


_EVENT_FIELDS = ("conversation_id", "run_id", "seq", "event", "data", "created_at")


def events_insert(events: Sequence[PendingEvent], created_at: datetime) -> None:
    """INSERT ``events`` as ``RunEvent`` rows, in as few statements as the database's parameter limit
    allows (the conversation's unique ``seq`` still refuses a duplicate)."""
    if not events:
        return
    table = connection.ops.quote_name(RunEvent._meta.db_table)
    columns = ", ".join(_column(RunEvent, name.removesuffix("_id")) for name in _EVENT_FIELDS)
    per_statement = max(1, (connection.features.max_query_params or 60000) // len(_EVENT_FIELDS))
    stamp = _prep(RunEvent, "created_at", created_at)
    ids: dict[uuid.UUID, Any] = {}

    def prep_id(value: uuid.UUID) -> Any:
        prepared = ids.get(value)
        if prepared is None:
            prepared = ids[value] = _uuid(value)
        return prepared

    with connection.cursor() as cursor:
        for start in range(0, len(events), per_statement):
            chunk = events[start : start + per_statement]
            values = ", ".join(["(%s, %s, %s, %s, %s, %s)"] * len(chunk))
            params: list[Any] = []
            for event in chunk:
                params += (
                    prep_id(event.conversation_id),
                    prep_id(event.run_id),
                    event.seq,
                    event.event,
                    _prep(RunEvent, "data", event.data),
                    stamp,
                )
            cursor.execute(f"INSERT INTO {table} ({columns}) VALUES {values}", params)


def _uuid(value: uuid.UUID) -> Any:
    """A UUID as the database takes it (native on PostgreSQL, hex text on SQLite)."""
    return Run._meta.pk.get_db_prep_value(value, connection, prepared=False)
