"""Schema tools of database connectors: the tables an account can read, and one table's description.

``list_tables`` answers the schemas, tables and views the connector's account can read (with their
comments and the server's estimated row counts); ``describe_table`` a table's columns (type,
nullability, key, comment), its keys and foreign keys, and, when the admin allows samples, its
first few rows. Both read the server's catalogue (PostgreSQL's ``pg_catalog``, MySQL's
``information_schema``) through the connector's ordinary read path (READ ONLY, statement timeout,
row and size caps), keep to the connector's allow list (:mod:`connectors.sql.allow_list`), and are
cached per connector for ``schema_cache_seconds``; :func:`schema_cache_clear` forgets a connector's
entries (Test connection and "Refresh schema" call it). The cache is per process: another
process sees a change when its entries expire.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from connectors.adapter_types import CallOutcome, DatabaseConnectorConfig
from connectors.sql.allow_list import TableAllowList
from connectors.sql.guard import MYSQL_ENGINES
from connectors.sql.mysql.dsn import parse_mysql_dsn
from connectors.sql.outcomes import sql_error, sql_ok
from connectors.sql.postgres.read import QueryResult
from connectors.sql.tables import render_table

LIST_TABLES = "list_tables"
DESCRIBE_TABLE = "describe_table"
SCHEMA_TOOLS = (LIST_TABLES, DESCRIBE_TABLE)
SAMPLE_ROWS = 3
_MAX_TABLES = 1_000

# A read of ``sql`` with ``params`` on the connector's read path: its rows, or an error outcome.
Reader = Callable[
    [DatabaseConnectorConfig, str, "dict[str, Any] | None"], Awaitable["QueryResult | CallOutcome"]
]

_PG_TABLES = f"""
SELECT n.nspname AS schema, c.relname AS name,
  CASE c.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'f' THEN 'foreign table'
  ELSE 'table' END AS kind,
  CASE WHEN c.reltuples < 0 THEN NULL ELSE c.reltuples::bigint END AS estimated_rows,
  obj_description(c.oid, 'pg_class') AS comment
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'
  AND has_table_privilege(c.oid, 'SELECT')
ORDER BY 1, 2 LIMIT {_MAX_TABLES}
"""
# By name, not to_regclass(): openGauss (PostgreSQL 9.2 based) has no to_regclass.
_PG_RELATION = (
    "(SELECT c.oid FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
    " WHERE n.nspname = %(schema)s AND c.relname = %(table)s)"
)
_PG_COLUMNS = f"""
SELECT a.attname AS column, format_type(a.atttypid, a.atttypmod) AS type,
  CASE WHEN a.attnotnull THEN 'no' ELSE 'yes' END AS nullable,
  (SELECT string_agg(CASE k.contype WHEN 'p' THEN 'primary' WHEN 'u' THEN 'unique' ELSE 'foreign' END, ', ')
     FROM pg_catalog.pg_constraint k
     WHERE k.conrelid = a.attrelid AND a.attnum = ANY (k.conkey) AND k.contype IN ('p', 'u', 'f')) AS key,
  col_description(a.attrelid, a.attnum) AS comment
FROM pg_catalog.pg_attribute a
WHERE a.attrelid = {_PG_RELATION} AND a.attnum > 0 AND NOT a.attisdropped
  AND has_table_privilege(a.attrelid, 'SELECT')
ORDER BY a.attnum
"""
_PG_KEYS = f"""
SELECT conname AS name, pg_get_constraintdef(oid) AS definition FROM pg_catalog.pg_constraint
WHERE conrelid = {_PG_RELATION} AND contype IN ('p', 'u', 'f') AND has_table_privilege(conrelid, 'SELECT')
ORDER BY contype, conname
"""
_MYSQL_HIDDEN = "('information_schema', 'mysql', 'performance_schema', 'sys')"
_MYSQL_TABLES = f"""
SELECT TABLE_SCHEMA AS `schema`, TABLE_NAME AS name,
  CASE TABLE_TYPE WHEN 'BASE TABLE' THEN 'table' WHEN 'VIEW' THEN 'view' ELSE LOWER(TABLE_TYPE) END AS kind,
  TABLE_ROWS AS estimated_rows, NULLIF(TABLE_COMMENT, '') AS comment
FROM information_schema.TABLES WHERE TABLE_SCHEMA NOT IN {_MYSQL_HIDDEN}
ORDER BY 1, 2 LIMIT {_MAX_TABLES}
"""
_MYSQL_COLUMNS = """
SELECT COLUMN_NAME AS `column`, COLUMN_TYPE AS type, LOWER(IS_NULLABLE) AS nullable,
  CASE COLUMN_KEY WHEN 'PRI' THEN 'primary' WHEN 'UNI' THEN 'unique' WHEN 'MUL' THEN 'index' ELSE NULL END AS `key`,
  NULLIF(COLUMN_COMMENT, '') AS comment
FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %(schema)s AND TABLE_NAME = %(table)s
ORDER BY ORDINAL_POSITION
"""
_MYSQL_KEYS = """
SELECT CONSTRAINT_NAME AS name, COLUMN_NAME AS `column`,
  CONCAT_WS('.', REFERENCED_TABLE_SCHEMA, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME) AS `references`
FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = %(schema)s AND TABLE_NAME = %(table)s
ORDER BY CONSTRAINT_NAME, ORDINAL_POSITION
"""

DESCRIBE_PARAMETERS: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "table": {"type": "string", "description": "The table or view, as listed by list_tables."},
        "schema": {"type": "string", "description": "Its schema (list_tables shows it); optional."},
    },
    "required": ["table"],
    "additionalProperties": False,
}
LIST_PARAMETERS: Mapping[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}


def default_schema(config: DatabaseConnectorConfig) -> str:
    """Where an unqualified table name is looked for: MySQL's DSN database, PostgreSQL's ``public``."""
    if config.engine in MYSQL_ENGINES:
        try:
            return parse_mysql_dsn(config.dsn).database
        except ValueError:
            return ""
    return "public"


def _quoted(config: DatabaseConnectorConfig, name: str) -> str:
    if config.engine in MYSQL_ENGINES:
        return "`" + name.replace("`", "``") + "`"
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True, slots=True)
class _Entry:
    expires: float
    outcome: CallOutcome


_cache: dict[tuple[str, str, str, str, str], _Entry] = {}


def schema_cache_clear(connector_id: str) -> None:
    """Forget the cached schema answers of one connector (in this process)."""
    for key in [k for k in _cache if k[0] == connector_id]:
        del _cache[key]


async def _list_tables(config: DatabaseConnectorConfig, read: Reader, started: float) -> CallOutcome:
    mysql = config.engine in MYSQL_ENGINES
    listing = await read(replace(config, max_rows=_MAX_TABLES), _MYSQL_TABLES if mysql else _PG_TABLES, None)
    if isinstance(listing, CallOutcome):
        return listing
    allowed = TableAllowList.parse(config.allowed_tables)
    rows = [r for r in listing.rows if allowed.allows(str(r[0]), str(r[1]))]
    table = render_table(
        listing.columns, rows, more_rows=listing.more_rows, max_bytes=config.max_result_bytes
    )
    return sql_ok(table.text, table.rows_shown, started, truncated=table.truncated)


async def _describe_table(
    config: DatabaseConnectorConfig, read: Reader, args: Mapping[str, Any], started: float
) -> CallOutcome:
    table, schema = args.get("table"), args.get("schema") or default_schema(config)
    if not isinstance(table, str) or not table.strip() or not isinstance(schema, str):
        return sql_error("describe_table needs the 'table' argument (and optionally 'schema')", started)
    if "." in table and not args.get("schema"):
        schema, _, table = table.partition(".")
    if not TableAllowList.parse(config.allowed_tables).allows(schema, table):
        return sql_error(f"no table {schema[:40]}.{table[:40]} is available on this connector", started)
    mysql = config.engine in MYSQL_ENGINES
    params = {"schema": schema, "table": table}
    columns = await read(config, _MYSQL_COLUMNS if mysql else _PG_COLUMNS, params)
    if isinstance(columns, CallOutcome):
        return columns
    if not columns.rows:
        return sql_error(f"no table {schema[:40]}.{table[:40]} that this account can read", started)
    keys = await read(config, _MYSQL_KEYS if mysql else _PG_KEYS, params)
    if isinstance(keys, CallOutcome):
        return keys
    budget = config.max_result_bytes
    parts = [
        f"{schema}.{table}",
        render_table(columns.columns, columns.rows, more_rows=False, max_bytes=budget).text,
    ]
    if keys.rows:
        parts += ["keys:", render_table(keys.columns, keys.rows, more_rows=False, max_bytes=budget).text]
    if config.schema_samples:
        sample_sql = f"SELECT * FROM {_quoted(config, schema)}.{_quoted(config, table)} LIMIT {SAMPLE_ROWS}"
        sample = await read(replace(config, max_rows=SAMPLE_ROWS), sample_sql, None)
        if isinstance(sample, CallOutcome):
            parts += ["sample rows: " + (sample.error or "unavailable")]
        else:
            parts += [
                "sample rows:",
                render_table(sample.columns, sample.rows, more_rows=False, max_bytes=budget).text,
            ]
    text = "\n".join(parts)
    if len(text.encode()) > budget:
        text = (
            text.encode()[: max(0, budget - 40)].decode(errors="ignore")
            + "\n(description cut at the size limit)"
        )
    return sql_ok(text, len(columns.rows), started)


async def schema_call(
    config: DatabaseConnectorConfig, tool: str, args: Mapping[str, Any], read: Reader
) -> CallOutcome:
    """Answer one schema tool (``list_tables`` or ``describe_table``), from the cache when it is fresh."""
    started = time.perf_counter()
    settings = f"{config.dsn}\x00{','.join(config.allowed_tables)}\x00{config.schema_samples}"
    key = (
        config.connector_id,
        hashlib.sha256(settings.encode()).hexdigest(),
        tool,
        str(args.get("schema") or ""),
        str(args.get("table") or ""),
    )
    entry = _cache.get(key)
    if entry is not None and entry.expires > time.monotonic():
        return replace(entry.outcome, latency_ms=(time.perf_counter() - started) * 1000)
    if tool == LIST_TABLES:
        outcome = await _list_tables(config, read, started)
    elif tool == DESCRIBE_TABLE:
        outcome = await _describe_table(config, read, args, started)
    else:
        return sql_error(f"unknown schema tool {tool[:40]!r}", started)
    if outcome.status == "ok" and config.schema_cache_seconds > 0:
        _cache[key] = _Entry(time.monotonic() + config.schema_cache_seconds, outcome)
    return outcome
