"""The MySQL and MariaDB connector adapter (asyncmy, one connection pool per connector and loop).

Read actions and free-form SQL run in ``START TRANSACTION READ ONLY`` after the session gets the
statement timeout (MariaDB's ``max_statement_time``, MySQL's ``max_execution_time``, which MySQL
applies to read-only SELECTs: https://dev.mysql.com/doc/refman/8.0/en/server-system-variables.html#sysvar_max_execution_time,
https://mariadb.com/kb/en/aborting-statements/) and a ``sql_mode`` without ``NO_BACKSLASH_ESCAPES``
and ``ANSI_QUOTES``, so the server reads strings and quotes exactly as the SQL guard's parser did.
A plain query is read through a query around it (:mod:`connectors.sql.mysql.read`) in which the server
cuts every long value and sends at most ``max_rows + 1`` rows, so the rest of a capped result is
drained cheaply and the connection is reused. Any other statement is read unbuffered as it is,
stopping at ``max_rows + 1`` rows or the result budget; a connection with rows left unread is then
closed rather than drained. The transaction is rolled back.

Write actions (``is_write=True``) run in a normal transaction and are committed; their timeout is
the server's on MariaDB and the client's on MySQL (which has no statement timeout for writes).
Between calls the pool resets the session (:mod:`connectors.sql.mysql.pool`). Arguments are bound as
``%(name)s`` parameters, which the driver escapes for the session's ``sql_mode``; SQL text is never
formatted by us.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any

import asyncmy
from asyncmy.cursors import Cursor, SSCursor
from asyncmy.errors import Error as MySqlError

from connectors.adapter_types import DatabaseConnectorConfig
from connectors.sql.binding import template_params
from connectors.sql.dsn_errors import DsnError
from connectors.sql.mysql.dsn import pinned_mysql
from connectors.sql.mysql.grants import AccountPrivileges, grant_privileges
from connectors.sql.mysql.pool import (
    MySqlConnectFailed,
    connect_mysql,
    mysql_code,
    mysql_message,
    mysql_pool_for,
)
from connectors.sql.mysql.read import MAX_WRAPPED_COLUMNS, UNWRAPPABLE_CODES, MySqlCutPlan, probe_sql
from connectors.sql.postgres.read import QueryResult
from connectors.sql.tables import render_cell
from connectors.ssrf import HostResolutionError, SSRFBlocked

_FETCH_CHUNK = 50
_READ_HINT = " (read actions accept one SELECT, VALUES or WITH ... SELECT query)"
# The client waits this long past the server's statement timeout, so the server's error comes first.
_CLIENT_GRACE_SECONDS = 1.0
_PLAIN_SQL_MODE = (
    "TRIM(BOTH ',' FROM REPLACE(REPLACE(CONCAT(',', @@SESSION.sql_mode, ','),"
    " ',NO_BACKSLASH_ESCAPES,', ','), ',ANSI_QUOTES,', ','))"
)
# Error numbers: https://mariadb.com/kb/en/mariadb-error-codes/ and MySQL's server error reference.
_TIMEOUT_CODES = frozenset({1969, 3024, 1317})  # max_statement_time, max_execution_time, interrupted
_READ_ONLY_CODES = frozenset({1792})  # ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
_DENIED_CODES = frozenset({1044, 1142, 1143, 1227, 1370})
_SYNTAX_CODES = frozenset({1064, 1149})
# A role's grants are read by taking it on (MariaDB) or through USING (MySQL); at most this many roles.
_MAX_ROLES = 20


class MySqlDeadlineExceeded(Exception):
    """The server did not end the statement by the statement timeout."""


def mysql_params(sql_template: str, args: Mapping[str, Any]) -> dict[str, Any] | None:
    """The template's ``%(name)s`` parameters from ``args`` (dicts and lists bound as JSON text)."""
    return template_params(
        sql_template,
        args,
        bound=lambda v: json.dumps(v, ensure_ascii=False) if isinstance(v, dict | list) else v,
    )


def _rowcount(cursor: Cursor) -> int:
    """The cursor's row count (-1 before a result): an int, which asyncmy's stub declares as ``object``."""
    return cursor.rowcount  # type: ignore[return-value]  # asyncmy's stub types rowcount as object


def is_mariadb(conn: asyncmy.Connection) -> bool:
    return "mariadb" in (conn.get_server_info() or "").lower()


async def _set_limits(conn: asyncmy.Connection, config: DatabaseConnectorConfig, *, write: bool) -> None:
    ms = int(config.statement_timeout_ms)
    if is_mariadb(conn):
        timeout = f", SESSION max_statement_time = {ms / 1000:.3f}"
    else:
        timeout = "" if write else f", SESSION max_execution_time = {ms}"
    async with conn.cursor() as cursor:
        await cursor.execute(f"SET SESSION sql_mode = {_PLAIN_SQL_MODE}{timeout}")


async def _rollback(conn: asyncmy.Connection) -> bool:
    """Roll back; whether the connection is still usable."""
    try:
        async with conn.cursor() as cursor:
            await cursor.execute("ROLLBACK")
        return True
    except (MySqlError, OSError, RuntimeError):
        return False


async def _fetch(
    cursor: Cursor,
    config: DatabaseConnectorConfig,
    *,
    chunk: int = _FETCH_CHUNK,
    row: Callable[[tuple[Any, ...]], tuple[Any, ...]] = tuple,
) -> tuple[list[tuple[Any, ...]], bool]:
    """Up to ``max_rows + 1`` rows within the size budget; and whether the result was read to its end."""
    rows: list[tuple[Any, ...]] = []
    size, exhausted = 0, False
    while not exhausted and len(rows) <= config.max_rows and size <= config.max_result_bytes:
        wanted = min(chunk, config.max_rows + 1 - len(rows))
        fetched = [row(r) for r in await cursor.fetchmany(wanted)]
        rows.extend(fetched)
        exhausted = len(fetched) < wanted
        size += sum(len(render_cell(v)) + 3 for r in fetched for v in r)
    return rows, exhausted


async def _cut_plan(
    conn: asyncmy.Connection, config: DatabaseConnectorConfig, statement: str
) -> tuple[MySqlCutPlan, tuple[str, ...]] | None:
    """How to read ``statement`` with values cut by the server, and its column names (``None``: as it is)."""
    probe = probe_sql(statement)
    if probe is None:
        return None
    try:
        async with conn.cursor() as cursor:
            await cursor.execute(probe)  # LIMIT 0: the server plans the statement and reads no row
            columns = tuple(d[0] for d in cursor.description or ())
    except MySqlError as exc:
        if mysql_code(exc) in UNWRAPPABLE_CODES:
            return None
        raise
    if not columns or len(columns) > MAX_WRAPPED_COLUMNS:
        return None
    return MySqlCutPlan.for_columns(len(columns), config.max_result_bytes), columns


async def _read_cut(
    conn: asyncmy.Connection, config: DatabaseConnectorConfig, statement: str, plan: MySqlCutPlan
) -> list[tuple[Any, ...]] | None:
    """At most ``max_rows + 1`` rows, every value cut by the server; what is left unread is drained.

    ``None`` when the server cannot resolve the wrapped query (it refuses it before running it)."""
    wrapped = plan.sql(statement, config.max_rows + 1)
    if wrapped is None:
        return None
    chunk = max(1, min(_FETCH_CHUNK, config.max_result_bytes // max(1, plan.row_bytes)))
    cursor = conn.cursor(SSCursor)
    try:
        try:
            await cursor.execute(wrapped)
            rows, _ = await _fetch(cursor, config, chunk=chunk, row=plan.row)
        except MySqlError as exc:
            if mysql_code(exc) in UNWRAPPABLE_CODES:  # raised with the first packet, before any row
                return None
            raise
    finally:
        await cursor.close()  # reads the rest: at most max_rows + 1 rows of cut values
    return rows


async def _run_read(
    conn: asyncmy.Connection, config: DatabaseConnectorConfig, sql: str, params: dict[str, Any] | None
) -> tuple[QueryResult, bool]:
    """The read's result, and whether the connection may be reused."""
    await _set_limits(conn, config, write=False)
    async with conn.cursor() as cursor:
        await cursor.execute("START TRANSACTION READ ONLY")
        statement = cursor.mogrify(sql, params)  # bound as execute() would bind it
    reusable = False
    try:
        async with asyncio.timeout(config.statement_timeout_ms / 1000 + _CLIENT_GRACE_SECONDS):
            rows = None
            planned = await _cut_plan(conn, config, statement)
            if planned is not None:
                plan, columns = planned
                rows = await _read_cut(conn, config, statement, plan)
            if rows is not None:
                exhausted, rowcount = True, len(rows)
            else:
                cursor = conn.cursor(SSCursor)
                await cursor.execute(sql, params)
                columns = tuple(d[0] for d in cursor.description or ())
                rows, exhausted = await _fetch(cursor, config) if columns else ([], True)
                rowcount = max(0, _rowcount(cursor)) if not columns else len(rows)
                if exhausted:
                    await cursor.close()
        reusable = exhausted  # else rows are left unread: closing the connection is cheaper than reading them
    except TimeoutError:
        raise MySqlDeadlineExceeded from None
    except MySqlError as exc:
        reusable = mysql_code(exc) is not None  # a server error leaves the connection in a known state
        raise
    finally:
        if reusable:
            reusable = await _rollback(conn)
    result = QueryResult.capped(
        columns, rows, max_rows=config.max_rows, rowcount=rowcount, unread=not exhausted
    )
    return result, reusable


async def _run_write(
    conn: asyncmy.Connection, config: DatabaseConnectorConfig, sql: str, params: dict[str, Any] | None
) -> tuple[QueryResult, bool]:
    await _set_limits(conn, config, write=True)
    async with conn.cursor() as cursor:
        await cursor.execute("START TRANSACTION")
    committed = False
    try:
        async with asyncio.timeout(config.statement_timeout_ms / 1000 + _CLIENT_GRACE_SECONDS):
            async with conn.cursor() as cursor:
                await cursor.execute(sql, params)
                columns = tuple(d[0] for d in cursor.description or ())
                rows = list(await cursor.fetchmany(config.max_rows + 1)) if columns else []
                rowcount = _rowcount(cursor)
                await cursor.execute("COMMIT")
                committed = True
    except TimeoutError:
        raise MySqlDeadlineExceeded from None  # the connection is closed: the server rolls back
    finally:
        reusable = committed or await _rollback(conn)
    return QueryResult.capped(columns, rows, max_rows=config.max_rows, rowcount=rowcount), reusable


def mysql_error_text(exc: BaseException, config: DatabaseConnectorConfig, *, write: bool) -> str:
    """A short, DSN-free explanation of ``exc`` for the LLM and the call log."""
    if isinstance(exc, SSRFBlocked | DsnError | HostResolutionError):
        return str(exc)
    if isinstance(exc, MySqlConnectFailed):
        return f"could not connect to the database: {exc}"
    code = mysql_code(exc) if isinstance(exc, MySqlError) else None
    if isinstance(exc, MySqlDeadlineExceeded) or code in _TIMEOUT_CODES:
        return (
            f"statement timeout: the query ran longer than {config.statement_timeout_ms} ms and was cancelled"
        )
    if isinstance(exc, TimeoutError):
        return "the database did not answer in time"
    if code in _READ_ONLY_CODES:
        return (
            "refused: this action is read-only and the statement tries to write (" + mysql_message(exc) + ")"
        )
    if code in _DENIED_CODES:
        return "permission denied: " + mysql_message(exc)
    if code in _SYNTAX_CODES and not write:
        return "database error: " + mysql_message(exc) + _READ_HINT
    if isinstance(exc, MySqlError):
        return "database error: " + mysql_message(exc)
    return f"unexpected error ({type(exc).__name__})"


EXPECTED_ERRORS = (
    MySqlError,
    MySqlConnectFailed,
    MySqlDeadlineExceeded,
    TimeoutError,
    OSError,
    SSRFBlocked,
    DsnError,
    HostResolutionError,
)


async def mysql_execute(
    config: DatabaseConnectorConfig, sql: str, params: dict[str, Any] | None, *, write: bool
) -> QueryResult:
    """Run one statement with no SQL-guard check on a pooled connection: reads READ ONLY, writes committed."""
    overall = config.connect_timeout + config.statement_timeout_ms / 1000 + 5
    async with asyncio.timeout(overall):
        pool = await mysql_pool_for(config)
        conn = await pool.acquire()
        reusable = False
        try:
            run = _run_write if write else _run_read
            result, reusable = await run(conn, config, sql, params)
        except MySqlError as exc:
            reusable = mysql_code(exc) is not None and conn.connected
            raise
        finally:
            await pool.release(conn, reusable=reusable)
    return result


async def mysql_test_connection(config: DatabaseConnectorConfig) -> tuple[str, AccountPrivileges]:
    """Connect (SSRF-checked, not pooled), run ``SELECT 1`` read-only: the server version, and what the
    account (with every role it may take on) holds beyond reading."""
    async with asyncio.timeout(config.connect_timeout + 5):
        pinned = await pinned_mysql(config.dsn, allowed_private_hosts=config.allowed_private_hosts)
        conn = await connect_mysql(pinned, config)
        try:
            async with conn.cursor() as cursor:
                await cursor.execute("START TRANSACTION READ ONLY")
                await cursor.execute("SELECT 1, VERSION()")
                row = await cursor.fetchone()
                await cursor.execute("ROLLBACK")
                version = str(row[1]) if row else "?"
                privileges = await _account_privileges(cursor, mariadb="mariadb" in version.lower())
        finally:
            conn.close()
    name = "MariaDB" if "mariadb" in version.lower() else "MySQL"
    return f"{name} {version}", privileges


async def _account_privileges(cursor: Cursor, *, mariadb: bool) -> AccountPrivileges:
    """The account's grants and those of every role granted to it (active or not: a session may take one
    on). A role whose grants cannot be read counts as writing. The connection is closed afterwards, so the
    roles taken on here do not outlive it."""
    await cursor.execute("SHOW GRANTS")
    found = grant_privileges(str(g[0]) for g in await cursor.fetchall())
    writes, roles, seen = set(found.writes), list(found.roles), set[str]()
    while roles and len(seen) < _MAX_ROLES:
        role = roles.pop(0)
        if role in seen:
            continue
        seen.add(role)
        try:
            if mariadb:
                await cursor.execute(f"SET ROLE {role}")
                await cursor.execute("SHOW GRANTS")
            else:
                await cursor.execute(f"SHOW GRANTS FOR CURRENT_USER() USING {role}")
            more = grant_privileges(str(g[0]) for g in await cursor.fetchall())
        except MySqlError:
            writes.add(f"ROLE {role}")
            continue
        writes.update(more.writes)
        roles += [r for r in more.roles if r not in seen]
    if roles:
        writes.add("ROLES")
    return AccountPrivileges(writes=tuple(sorted(writes)), roles=tuple(sorted(seen)))
