"""A connector's schema/table allow list, and whether a read stays inside it.

An admin may limit a database connector to listed schemas (``sales``) or tables (``sales.orders``);
everything else is invisible to the schema tools and refused by the SQL guard. The check parses
the statement (the same sqlglot dialect as :mod:`connectors.sql.guard`) and looks at every table it
reads: an unqualified name is taken to be in the connector's default schema (PostgreSQL's
``public``, or for MySQL the DSN's database), except PostgreSQL's ``pg_*`` names, which resolve to
the catalogue first and so count as ``pg_catalog``. CTE names are the statement's own. Names are
compared as the server folds them: PostgreSQL lower-cases unquoted names, MySQL compares them as
written (a table name differing only in case is another table on Linux servers).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.errors import SqlglotError

from connectors.sql.guard import ENGINES, guard_family


@dataclass(frozen=True, slots=True)
class TableAllowList:
    """Listed schemas and ``schema.table`` entries; empty means every table the account can read."""

    schemas: frozenset[str] = frozenset()
    tables: frozenset[tuple[str, str]] = frozenset()

    @classmethod
    def parse(cls, entries: Sequence[str]) -> TableAllowList:
        schemas, tables = set(), set()
        for entry in entries:
            text = entry.strip()
            if not text:
                continue
            schema, dot, table = text.partition(".")
            if dot:
                tables.add((schema.strip(), table.strip()))
            else:
                schemas.add(schema)
        return cls(frozenset(schemas), frozenset(tables))

    @property
    def is_open(self) -> bool:
        return not self.schemas and not self.tables

    def allows(self, schema: str, table: str) -> bool:
        """Whether ``schema.table`` is visible (always, when nothing is listed)."""
        return self.is_open or schema in self.schemas or (schema, table) in self.tables

    def allows_schema(self, schema: str) -> bool:
        """Whether anything of ``schema`` is visible."""
        return self.is_open or schema in self.schemas or any(s == schema for s, _ in self.tables)


def _name(identifier: exp.Expression | None, *, fold: bool) -> str:
    if not isinstance(identifier, exp.Identifier):
        return ""
    text = str(identifier.this)
    return text if identifier.quoted or not fold else text.lower()


def _cte_name(cte: exp.CTE, *, fold: bool) -> str:
    alias = cte.args.get("alias")
    return _name(alias.this if isinstance(alias, exp.TableAlias) else None, fold=fold)


def read_tables(sql: str, *, engine: str, default_schema: str) -> list[tuple[str, str]] | None:
    """``(schema, table)`` of every table ``sql`` reads (``None`` when it cannot be parsed)."""
    family = guard_family(engine)
    dialect = ENGINES[family].dialect
    fold = family == "postgresql"
    try:
        statements = [s for s in dialect.parse(sql) if s is not None]
    except (SqlglotError, RecursionError, ValueError, TypeError):
        return None
    found: list[tuple[str, str]] = []
    for statement in statements:
        ctes = {_cte_name(cte, fold=fold) for cte in statement.find_all(exp.CTE)}
        for table in statement.find_all(exp.Table):
            if not isinstance(table.this, exp.Identifier):
                continue  # a function in FROM: the guard's function check judges it
            name = _name(table.this, fold=fold)
            schema = _name(table.args.get("db"), fold=fold)
            if not schema:
                if name in ctes:
                    continue
                schema = "pg_catalog" if fold and name.startswith("pg_") else default_schema
            found.append((schema, name))
    return found


def allow_list_problem(sql: str, *, engine: str, allowed: TableAllowList, default_schema: str) -> str | None:
    """Why ``sql`` reads outside the allow list, or ``None`` when it stays inside (or nothing is listed)."""
    if allowed.is_open:
        return None
    tables = read_tables(sql, engine=engine, default_schema=default_schema)
    if tables is None:
        return "the SQL could not be parsed"
    for schema, table in tables:
        if not allowed.allows(schema, table):
            return f"reads {schema[:40]}.{table[:40]}, which this connector does not make available"
    return None
