"""Plain SQL for the run package's hot statements: quoting a model's columns and preparing values.

The event writer, the lease renewal and a run's end are written in plain SQL (a string built once per
batch) rather than through the ORM, whose compilation was the largest share of the process's database
CPU at 200 conversations. Values go through each field's own ``get_db_prep_value``, so PostgreSQL and
SQLite get what the ORM would have sent, except that a value neither stores (NaN, NUL, a lone surrogate)
is sent in a safe, spelled-out form instead of failing the batch (:func:`prep_field`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import connection, models

from agents.engine.strict_json import dumps_storable, text_safe


class StorableJSON(str):
    """JSON text that :func:`~agents.engine.strict_json.dumps_storable` made: a JSON column stores it as
    it is, without serialising the value again (the event writer encodes an event's data once)."""


def table(model: Any) -> str:
    """The quoted table name of ``model``."""
    return connection.ops.quote_name(model._meta.db_table)


def column(model: Any, name: str) -> str:
    """The quoted column of ``model``'s field ``name``."""
    return connection.ops.quote_name(model._meta.get_field(name).column)


def prep(model: Any, name: str, value: Any) -> Any:
    """``value`` prepared for ``model``'s field ``name`` (see :func:`prep_field`)."""
    return prep_field(model._meta.get_field(name), value)


def prep_field(field: Any, value: Any) -> Any:
    """``value`` as the ORM would send it to ``field``, but always storable: a JSON column gets the text
    of :func:`~agents.engine.strict_json.dumps_storable` (NaN, NUL and lone surrogates spelled out, where
    ``json.dumps`` would send what both backends refuse), a text column loses NUL and lone surrogates.
    A run's events and checkpoints carry model output and tool results: none of it may make a batch fail.
    """
    if isinstance(field, models.JSONField):
        if connection.vendor == "postgresql":
            from psycopg.types.json import Jsonb  # the adapter Django's own JSONField sends

            return Jsonb(value, dumps=str if isinstance(value, StorableJSON) else dumps_storable)
        return str(value) if isinstance(value, StorableJSON) else dumps_storable(value)
    if isinstance(value, str):
        value = text_safe(value)
    return field.get_db_prep_value(value, connection, prepared=False)


@contextmanager
def binary_cursor() -> Iterator[Any]:
    """A cursor on PostgreSQL whose parameters the server binds, sent in binary: write them ``%b``.

    Django's own cursor binds on the client: psycopg renders every parameter as a quoted SQL literal, in
    Python, escaping each element of an array one by one. The event writer's statement is arrays of
    JSON text, and at 200 conversations that rendering was 42 % of the writer thread's CPU; bound by the
    server in binary, psycopg's C dumpers send the same values as they are (a batch of 40 events: 1.19 ms
    of CPU against 0.13 ms, ``benchmarks/param_binding.py``; ``benchmarks/README.md``, issue #22, session 11). The cursor is wrapped as
    Django wraps its own (the same error translation, query log and execute wrappers); the connection
    never prepares statements (Django sets no ``prepare_threshold``).
    """
    # PostgreSQL only (Django defines the class when psycopg 3 is installed).
    from django.db.backends.postgresql.base import ServerBindingCursor  # type: ignore[attr-defined]  # django-stubs lacks it

    connection.close_if_health_check_failed()
    connection.ensure_connection()
    connection.validate_thread_sharing()
    raw = ServerBindingCursor(connection.connection)
    cursor = connection.make_debug_cursor(raw) if connection.queries_logged else connection.make_cursor(raw)
    with cursor:
        yield cursor


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
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    if connection.vendor == "postgresql":
        arrays = ", ".join(f"%b::{f.db_type(connection)}[]" for f in fields)
        params = [[prep_field(field, row[i]) for row in rows] for i, field in enumerate(fields)]
        with binary_cursor() as cursor:
            cursor.execute(f"INSERT INTO {table(model)} ({columns}) SELECT * FROM unnest({arrays})", params)
        return
    with connection.cursor() as cursor:
        row_sql = "(" + ", ".join(["%s"] * len(fields)) + ")"
        per_statement = max(1, (connection.features.max_query_params or 60000) // len(fields))
        for start in range(0, len(rows), per_statement):
            chunk = rows[start : start + per_statement]
            params = [
                prep_field(field, value) for row in chunk for field, value in zip(fields, row, strict=True)
            ]
            cursor.execute(
                f"INSERT INTO {table(model)} ({columns}) VALUES {', '.join([row_sql] * len(chunk))}", params
            )
