"""Reading a statement's result within the connector's memory budget.

psycopg receives whole rows, and libpq a whole value, so a 20 MB value costs 20 MB (twice, as bytes
and as text) however early the caller stops. The value must be cut by the database: the statement
is declared once to learn its columns (``DECLARE`` only plans it), then read through a query
around it in which every value longer than a per-value budget arrives as its first characters
(``left(value::text, n)``), or a binary value as its size, and the rows come in chunks small
enough that one chunk fits the result budget. Fetching stops once the budget is spent, so a read
holds at most about twice the budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from connectors.adapter_types import DatabaseConnectorConfig
from connectors.sql.guard import without_trailing_semicolons
from connectors.sql.tables import MAX_CELL_CHARS, CutValue, render_cell

_READ_CURSOR = "connector_read"
_PROBE_CURSOR = "connector_columns"
_FETCH_CHUNK = 50
MAX_COLUMNS = 200  # two result columns per column must stay under PostgreSQL's 1,664
_MAX_VALUE_BYTES = 4 * MAX_CELL_CHARS  # a value longer than this is never shown whole anyway
_MIN_VALUE_BYTES = 256
_VALUE_OVERHEAD = 64  # what a fetched Python value costs besides its text
_BYTEA_OID = 17


class ReadLimitError(Exception):
    """The statement's result cannot be read within the connector's limits."""


@dataclass(frozen=True, slots=True)
class QueryResult:
    """The columns and rows a statement returned (at most ``max_rows``), and whether it had more."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    more_rows: bool
    rowcount: int

    @classmethod
    def capped(
        cls,
        columns: tuple[str, ...],
        rows: Sequence[tuple[Any, ...]],
        *,
        max_rows: int,
        rowcount: int,
        unread: bool = False,
    ) -> QueryResult:
        """The first ``max_rows`` of ``rows``; it has more when there were more rows, or rows left
        ``unread``."""
        return cls(columns, tuple(rows[:max_rows]), unread or len(rows) > max_rows, rowcount)


async def set_read_limits(conn: psycopg.AsyncConnection, config: DatabaseConnectorConfig) -> None:
    """In the read's transaction: the statement timeout, and ``pg_catalog`` first on the search path.

    With ``pg_catalog`` first, a built-in name the SQL guard allowed is the built-in even when the
    role's search path lists a schema with a function of the same name and arguments before it.
    """
    await conn.execute(
        "SELECT set_config('statement_timeout', %s, true), set_config('search_path',"
        " CASE WHEN current_setting('search_path') = '' THEN 'pg_catalog'"
        " ELSE 'pg_catalog, ' || current_setting('search_path') END, true)",
        (str(int(config.statement_timeout_ms)),),
    )


def value_budget(columns: int, budget: int) -> tuple[int, int]:
    """For a result of ``columns`` columns: the longest value sent whole, and how much of a longer one."""
    value_bytes = max(_MIN_VALUE_BYTES, min(_MAX_VALUE_BYTES, budget // max(1, columns)))
    return value_bytes, min(MAX_CELL_CHARS, value_bytes // 4)


@dataclass(frozen=True, slots=True)
class CutPlan:
    """How a read is fetched: every value cut by the database to ``value_bytes`` of text."""

    binary: tuple[bool, ...]  # per column: bytea, whose size is shown rather than its text
    value_bytes: int
    head_chars: int

    @classmethod
    def for_columns(cls, type_oids: tuple[int, ...], budget: int) -> CutPlan:
        value_bytes, head_chars = value_budget(len(type_oids), budget)
        return cls(
            binary=tuple(oid == _BYTEA_OID for oid in type_oids),
            value_bytes=value_bytes,
            head_chars=head_chars,
        )

    @property
    def row_bytes(self) -> int:
        """An upper bound of what one fetched row costs in memory."""
        return len(self.binary) * (self.value_bytes + _VALUE_OVERHEAD)

    def sql(self, statement: str) -> str:
        """``statement`` (a ``%(name)s`` template or plain SQL) read through the per-value cut."""
        n, head = self.value_bytes, self.head_chars
        names = ", ".join(f"c{i}" for i in range(len(self.binary)))
        cells = []
        for i, binary in enumerate(self.binary):
            size = f"octet_length(r.c{i})" if binary else f"octet_length(r.c{i}::text)"
            cut = size if binary else f"left(r.c{i}::text, {head})"
            cells.append(f"CASE WHEN {size} <= {n} THEN r.c{i} END, CASE WHEN {size} > {n} THEN {cut} END")
        # OFFSET 0 keeps the statement a subquery of its own, so each of its values is computed once.
        return (
            f"SELECT {', '.join(cells)} FROM (SELECT * FROM (\n{without_trailing_semicolons(statement)}\n)"
            f" AS s({names}) OFFSET 0) AS r"
        )

    def row(self, fetched: tuple[Any, ...]) -> tuple[Any, ...]:
        """The statement's row from a fetched row of (whole value, cut value) pairs."""
        values = []
        for i, binary in enumerate(self.binary):
            whole, cut = fetched[2 * i], fetched[2 * i + 1]
            if cut is None:
                values.append(whole)
            else:
                values.append(CutValue(byte_count=cut) if binary else CutValue(head=cut))
        return tuple(values)


async def fetch_read(
    conn: psycopg.AsyncConnection, config: DatabaseConnectorConfig, sql: str, params: dict[str, Any] | None
) -> QueryResult:
    """Read ``sql`` (inside the caller's transaction) with every value cut to the budget."""
    probe = conn.cursor(name=_PROBE_CURSOR)
    try:
        await probe.execute(sql, params)  # DECLARE only plans the statement: nothing runs yet
        description = probe.description or ()
    finally:
        await probe.close()
    if len(description) > MAX_COLUMNS:
        raise ReadLimitError(
            f"the query returns {len(description)} columns; at most {MAX_COLUMNS} can be read,"
            " select fewer columns"
        )
    columns = tuple(d.name for d in description)
    plan = CutPlan.for_columns(tuple(d.type_code for d in description), config.max_result_bytes)
    cursor = conn.cursor(name=_READ_CURSOR)
    try:
        await cursor.execute(plan.sql(sql) if columns else sql, params)
        chunk = max(1, min(_FETCH_CHUNK, config.max_result_bytes // max(1, plan.row_bytes)))
        rows: list[tuple[Any, ...]] = []
        size, exhausted = 0, False
        # Fetch max_rows + 1 rows (the extra one tells whether there are more), and stop early
        # once the rows fetched would already fill the size budget.
        while not exhausted and len(rows) <= config.max_rows and size <= config.max_result_bytes:
            wanted = min(chunk, config.max_rows + 1 - len(rows))
            fetched = [plan.row(r) for r in await cursor.fetchmany(wanted)]
            rows.extend(fetched)
            exhausted = len(fetched) < wanted
            size += sum(len(render_cell(v)) + 3 for row in fetched for v in row)
        return QueryResult.capped(
            columns, rows, max_rows=config.max_rows, rowcount=len(rows), unread=not exhausted
        )
    finally:
        await cursor.close()
