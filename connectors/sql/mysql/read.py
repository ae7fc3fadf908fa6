"""Reading a MySQL/MariaDB SELECT within the connector's budget: values cut and rows capped by the server.

asyncmy receives whole rows, so a 20 MB value costs 20 MB however early the caller stops, and rows
left unread must be drained or the connection closed. Like the PostgreSQL path
(:mod:`connectors.sql.postgres.read`), a plain query is therefore read through a query around it:

* a probe, ``SELECT * FROM (<statement> LIMIT 0) AS s``, learns the columns (nothing is read);
* the read, ``WITH s(c0, …) AS (<statement> LIMIT max_rows + 1) SELECT … FROM s LIMIT max_rows + 1``,
  sends each value no longer than a per-value budget whole, and of a longer one only its first
  characters and its size. The inner ``LIMIT`` (kept when the statement has its own) also keeps
  the statement's ``ORDER BY``, which MariaDB drops from a derived table without one.

At most ``max_rows + 1`` rows of bounded size come back, so what is left after the result budget
is spent is drained cheaply and the connection goes back to the pool clean. A statement this
cannot wrap (not a plain SELECT, duplicate column names, more columns than fit) is read as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from connectors.sql.guard import without_trailing_semicolons
from connectors.sql.postgres.read import value_budget
from connectors.sql.tables import CutValue

MAX_WRAPPED_COLUMNS = 1_000  # three result columns each must stay under the server's 4,096
# Error numbers: https://mariadb.com/kb/en/mariadb-error-codes/
# Duplicate column name, syntax error, unknown column (MariaDB resolves a UNION's ORDER BY against the
# wrapper's column names): the server refused the wrapped query before running it, read the statement as is.
UNWRAPPABLE_CODES = frozenset({1060, 1064, 1054})
_VALUE_OVERHEAD = 64  # what a fetched Python value costs besides its text


def statement_body(sql: str, cap: int) -> str | None:
    """``sql`` with a ``LIMIT cap`` of its own unless it has one; ``None`` when it is no plain query."""
    statement = without_trailing_semicolons(sql)
    try:
        tree = sqlglot.parse_one(statement, read="mysql")
    except SqlglotError:
        return None
    if not isinstance(tree, exp.Select | exp.SetOperation | exp.Subquery):
        return None
    if tree.args.get("limit") is not None:
        return statement
    return f"{statement}\nLIMIT {int(cap)}"  # on a line of its own: a trailing comment cannot hide it


def probe_sql(sql: str) -> str | None:
    """The query that learns ``sql``'s columns without reading a row (``None``: read it as it is)."""
    body = statement_body(sql, 0)
    return None if body is None else f"SELECT * FROM (\n{body}\n) AS s LIMIT 0"


@dataclass(frozen=True, slots=True)
class MySqlCutPlan:
    """How a read is fetched: every value longer than ``value_bytes`` cut by the server."""

    columns: int
    value_bytes: int
    head_chars: int

    @classmethod
    def for_columns(cls, columns: int, budget: int) -> MySqlCutPlan:
        value_bytes, head_chars = value_budget(columns, budget)
        return cls(columns=columns, value_bytes=value_bytes, head_chars=head_chars)

    @property
    def row_bytes(self) -> int:
        """An upper bound of what one fetched row costs in memory."""
        return self.columns * (self.value_bytes + self.head_chars * 4 + 3 * _VALUE_OVERHEAD)

    def sql(self, statement: str, cap: int) -> str | None:
        """``statement`` read through the per-value cut, at most ``cap`` rows (``None``: not wrappable)."""
        body = statement_body(statement, cap)
        if body is None:
            return None
        n, head = self.value_bytes, self.head_chars
        names = ", ".join(f"c{i}" for i in range(self.columns))
        cells = ", ".join(
            f"CASE WHEN LENGTH(s.c{i}) <= {n} THEN s.c{i} END,"
            f" CASE WHEN LENGTH(s.c{i}) > {n} THEN LEFT(s.c{i}, {head}) END,"
            f" CASE WHEN LENGTH(s.c{i}) > {n} THEN LENGTH(s.c{i}) END"
            for i in range(self.columns)
        )
        return f"WITH s({names}) AS (\n{body}\n) SELECT {cells} FROM s LIMIT {int(cap)}"

    def row(self, fetched: tuple[Any, ...]) -> tuple[Any, ...]:
        """The statement's row from a fetched row of (whole value, head, size) triples."""
        values = []
        for i in range(self.columns):
            whole, head, size = fetched[3 * i : 3 * i + 3]
            if size is None:
                values.append(whole)
            elif isinstance(head, bytes | bytearray):
                values.append(CutValue(byte_count=int(size)))
            else:
                values.append(CutValue(head=str(head)))
        return tuple(values)
