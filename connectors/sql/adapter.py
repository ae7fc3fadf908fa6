"""The PostgreSQL connector adapter (psycopg 3 async, one connection pool per connector and loop).

Read actions and free-form SQL run in ``BEGIN READ ONLY`` with a transaction-local
``statement_timeout`` (and ``pg_catalog`` first on the search path), inside a server-side cursor
(``DECLARE ... CURSOR FOR <statement>``): PostgreSQL accepts only one SELECT/VALUES query there and
refuses data-modifying WITH clauses, the extended protocol refuses a second statement, and the
cursor lets us fetch only ``max_rows + 1`` rows. The transaction is always rolled back.

A read holds at most about twice the result budget in memory (``connectors.sql.postgres.read`` fetches it
with every value cut by the database), and the statement timeout bounds the whole read, every
FETCH included: past it the query is cancelled on the server (the statement itself may have
switched the server's own timeout off).

Write actions (``is_write=True``) run in a normal transaction with the same timeout and are
committed. Before a connection is reused the pool runs ``DISCARD ALL``, so session settings,
temporary tables, prepared statements and advisory locks cannot leak into the next call.

Arguments are bound as query parameters (``%(name)s`` placeholders); SQL text is never formatted.

MySQL and MariaDB connectors (``config.engine``) take the same path through :mod:`connectors.sql.mysql.adapter`
with their own driver, pool and SQL-guard dialect; the result is rendered the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from typing import Any

import psycopg
from django.utils.translation import gettext
from psycopg import errors as pg_errors
from psycopg.pq import TransactionStatus
from psycopg.types.json import Jsonb
from psycopg_pool import PoolTimeout

from connectors.adapter_types import CallOutcome, DatabaseConnectorConfig, SqlActionSpec
from connectors.scrub import scrub
from connectors.sql.allow_list import TableAllowList, allow_list_problem
from connectors.sql.binding import ArgumentError, template_params
from connectors.sql.dsn import dsn_password
from connectors.sql.guard import MYSQL_ENGINES, classify_sql
from connectors.sql.mysql.adapter import EXPECTED_ERRORS as MYSQL_ERRORS
from connectors.sql.mysql.adapter import (
    mysql_error_text,
    mysql_execute,
    mysql_params,
    mysql_test_connection,
)
from connectors.sql.mysql.pool import aclose_mysql_pools
from connectors.sql.outcomes import sql_error, sql_ok
from connectors.sql.postgres.dsn import DsnError, pinned_conninfo
from connectors.sql.postgres.family import server_summary
from connectors.sql.postgres.pool import ConnectFailed, aclose_pools, acquire, db_message, pool_for
from connectors.sql.postgres.read import QueryResult, ReadLimitError, fetch_read, set_read_limits
from connectors.sql.schema import default_schema, schema_cache_clear, schema_call
from connectors.sql.tables import render_table
from connectors.ssrf import HostResolutionError, SSRFBlocked

logger = logging.getLogger(__name__)

_READ_HINT = " (read actions accept one SELECT, VALUES or WITH ... SELECT query)"


async def aclose_db_pools() -> None:
    """Close the connection pools of the running event loop (call on shutdown and in tests)."""
    await aclose_pools()
    await aclose_mysql_pools()


class ReadDeadlineExceeded(Exception):
    """Reading the result took longer than the statement timeout."""


def bind_params(sql_template: str, args: Mapping[str, Any]) -> dict[str, Any] | None:
    """The template's ``%(name)s`` parameters taken from ``args`` (dicts bound as jsonb)."""
    return template_params(sql_template, args, bound=lambda v: Jsonb(v) if isinstance(v, dict) else v)


async def _rollback(conn: psycopg.AsyncConnection) -> None:
    if conn.info.transaction_status in (TransactionStatus.INTRANS, TransactionStatus.INERROR):
        try:
            await conn.execute("ROLLBACK")
        except psycopg.Error:
            pass  # a broken connection; the pool discards it


@contextlib.asynccontextmanager
async def _transaction(conn: psycopg.AsyncConnection, begin: str) -> AsyncIterator[None]:
    """Open a transaction with ``begin``; whatever it leaves open when the block ends is rolled back."""
    await conn.execute(begin)
    try:
        yield
    finally:
        await _rollback(conn)


async def _set_timeout(conn: psycopg.AsyncConnection, config: DatabaseConnectorConfig) -> None:
    await conn.execute(
        "SELECT set_config('statement_timeout', %s, true)", (str(int(config.statement_timeout_ms)),)
    )


async def _run_read(
    conn: psycopg.AsyncConnection, config: DatabaseConnectorConfig, sql: str, params: dict[str, Any] | None
) -> QueryResult:
    async with _transaction(conn, "BEGIN READ ONLY"):
        await set_read_limits(conn, config)
        try:
            # psycopg cancels the running query on the server when the deadline interrupts it.
            async with asyncio.timeout(config.statement_timeout_ms / 1000):
                return await fetch_read(conn, config, sql, params)
        except TimeoutError:
            raise ReadDeadlineExceeded from None


async def _run_write(
    conn: psycopg.AsyncConnection, config: DatabaseConnectorConfig, sql: str, params: dict[str, Any] | None
) -> QueryResult:
    async with _transaction(conn, "BEGIN"):
        await _set_timeout(conn, config)
        cursor = conn.cursor()
        await cursor.execute(sql, params)
        columns: tuple[str, ...] = ()
        rows: list[tuple[Any, ...]] = []
        if cursor.description:
            columns = tuple(d.name for d in cursor.description)
            rows = await cursor.fetchmany(config.max_rows + 1)
        rowcount = cursor.rowcount
        await conn.execute("COMMIT")
    return QueryResult.capped(columns, rows, max_rows=config.max_rows, rowcount=rowcount)


def _error_text(exc: BaseException, config: DatabaseConnectorConfig, *, write: bool) -> str:
    if isinstance(exc, SSRFBlocked | DsnError | HostResolutionError):
        return str(exc)
    if isinstance(exc, ConnectFailed):
        return f"could not connect to the database: {exc}"
    if isinstance(exc, PoolTimeout):
        return "timed out waiting for a database connection"
    if isinstance(exc, ReadLimitError):
        return str(exc)
    if isinstance(exc, TimeoutError):
        return "the database did not answer in time"
    if isinstance(exc, pg_errors.QueryCanceled | ReadDeadlineExceeded):
        return (
            f"statement timeout: the query ran longer than {config.statement_timeout_ms} ms and was cancelled"
        )
    if isinstance(exc, pg_errors.ReadOnlySqlTransaction):
        return "refused: this action is read-only and the statement tries to write (" + db_message(exc) + ")"
    if isinstance(exc, pg_errors.InsufficientPrivilege):
        return "permission denied: " + db_message(exc)
    if isinstance(exc, pg_errors.SyntaxError) and not write:
        return "database error: " + db_message(exc) + _READ_HINT
    if isinstance(exc, psycopg.Error):
        return "database error: " + db_message(exc)
    return f"unexpected error ({type(exc).__name__})"


def _secrets(config: DatabaseConnectorConfig) -> tuple[str, ...]:
    return tuple(s for s in (config.dsn, dsn_password(config.dsn)) if s)


def _error_outcome(message: str, started: float, config: DatabaseConnectorConfig) -> CallOutcome:
    return sql_error(scrub(message, _secrets(config)), started)


async def _execute(
    config: DatabaseConnectorConfig,
    sql: str,
    params: dict[str, Any] | None,
    *,
    write: bool,
    started: float | None = None,
) -> CallOutcome:
    """Run one statement with no SQL-guard check: reads in READ ONLY, writes committed."""
    started = time.perf_counter() if started is None else started
    result = await _query(config, sql, params, write=write, started=started)
    if isinstance(result, CallOutcome):
        return result
    return _rendered(config, sql, result, started)


async def _read_rows(
    config: DatabaseConnectorConfig, sql: str, params: dict[str, Any] | None
) -> QueryResult | CallOutcome:
    """A read's rows (no SQL-guard check), or its error outcome: what the schema tools read through."""
    return await _query(config, sql, params, write=False, started=time.perf_counter())


async def _query(
    config: DatabaseConnectorConfig,
    sql: str,
    params: dict[str, Any] | None,
    *,
    write: bool,
    started: float,
) -> QueryResult | CallOutcome:
    if config.engine in MYSQL_ENGINES:
        try:
            return await mysql_execute(config, sql, params, write=write)
        except MYSQL_ERRORS as exc:
            return _error_outcome(mysql_error_text(exc, config, write=write), started, config)
    overall = config.connect_timeout + config.statement_timeout_ms / 1000 + 5
    try:
        async with asyncio.timeout(overall):
            pool = await pool_for(config)
            conn = await acquire(pool, config)
            try:
                run = _run_write if write else _run_read
                result = await run(conn, config, sql, params)
            finally:
                await pool.putconn(conn)
    except (
        psycopg.Error,
        ReadLimitError,
        ReadDeadlineExceeded,
        PoolTimeout,
        ConnectFailed,
        TimeoutError,
        SSRFBlocked,
        DsnError,
        HostResolutionError,
    ) as exc:
        return _error_outcome(_error_text(exc, config, write=write), started, config)
    return result


def _rendered(config: DatabaseConnectorConfig, sql: str, result: QueryResult, started: float) -> CallOutcome:
    secrets = _secrets(config)
    if result.columns:
        table = render_table(
            result.columns, result.rows, more_rows=result.more_rows, max_bytes=config.max_result_bytes
        )
        content, row_count, truncated = table.text, table.rows_shown, table.truncated
    else:
        content, row_count, truncated = f"{result.rowcount} row(s) affected", result.rowcount, False
    return sql_ok(
        scrub(content, secrets), row_count, started, truncated=truncated, request_bytes=len(sql.encode())
    )


async def db_call(
    config: DatabaseConnectorConfig, action: SqlActionSpec, args: Mapping[str, Any]
) -> CallOutcome:
    """Run one SQL action: its template with bound arguments, or checked free-form read-only SQL."""
    started = time.perf_counter()
    if action.schema_tool:
        outcome = await schema_call(config, action.schema_tool, args, _read_rows)
        outcome = replace(outcome, error=scrub(outcome.error, _secrets(config)))
    elif action.free_form:
        sql = args.get("sql")
        if not isinstance(sql, str) or not sql.strip():
            return _error_outcome("free-form SQL needs the 'sql' argument", started, config)
        verdict = classify_sql(sql, engine=config.engine)
        if not verdict.is_single_read:
            return _error_outcome(f"refused by the SQL guard: {verdict.reason}", started, config)
        outside = allow_list_problem(
            sql,
            engine=config.engine,
            allowed=TableAllowList.parse(config.allowed_tables),
            default_schema=default_schema(config),
        )
        if outside:
            return _error_outcome(f"refused by the SQL guard: {outside}", started, config)
        outcome = await _execute(config, sql, None, write=False, started=started)
    else:
        if not action.sql_template.strip():
            return _error_outcome("the action has no SQL template", started, config)
        bind = mysql_params if config.engine in MYSQL_ENGINES else bind_params
        try:
            params = bind(action.sql_template, args)
        except ArgumentError as exc:
            return _error_outcome(str(exc), started, config)
        outcome = await _execute(config, action.sql_template, params, write=action.is_write, started=started)
    logger.info(
        "database connector %s action %s: %s (%s rows) in %.0f ms",
        config.connector_id,
        action.name,
        outcome.status,
        outcome.row_count,
        outcome.latency_ms,
    )
    return outcome


async def db_test_connection(config: DatabaseConnectorConfig) -> CallOutcome:
    """Connect (SSRF-checked, not pooled) and run ``SELECT 1`` in a read-only transaction."""
    started = time.perf_counter()
    schema_cache_clear(config.connector_id)
    if config.engine in MYSQL_ENGINES:
        return await _mysql_test_connection(config, started)
    try:
        async with asyncio.timeout(config.connect_timeout + 5):
            conninfo = await pinned_conninfo(
                config.dsn,
                allowed_private_hosts=config.allowed_private_hosts,
                connect_timeout=config.connect_timeout,
            )
            conn = await psycopg.AsyncConnection.connect(conninfo, autocommit=True, prepare_threshold=None)
            try:
                await conn.execute("BEGIN READ ONLY")
                cursor = await conn.execute(
                    "SELECT 1, current_setting('server_version'), "
                    "(SELECT rolsuper FROM pg_roles WHERE rolname = current_user), version()"
                )
                row = await cursor.fetchone()
                await conn.execute("ROLLBACK")
            finally:
                await conn.close()
    except (psycopg.Error, TimeoutError, SSRFBlocked, DsnError, HostResolutionError) as exc:
        return _error_outcome(_error_text(exc, config, write=False), started, config)
    assert row is not None
    content = (
        f"connected: {server_summary(config.engine, str(row[3]), str(row[1]))}; read-only transactions work"
    )
    if row[2]:
        content += "; warning: the role is a superuser, use a SELECT-only role for read connectors"
    return CallOutcome(status="ok", content=content, latency_ms=(time.perf_counter() - started) * 1000)


async def _mysql_test_connection(config: DatabaseConnectorConfig, started: float) -> CallOutcome:
    try:
        server, privileges = await mysql_test_connection(config)
    except MYSQL_ERRORS as exc:
        return _error_outcome(mysql_error_text(exc, config, write=False), started, config)
    content = f"connected: {server}; read-only transactions work"
    if privileges.writes:
        # MySQL's read-only transaction lets DDL, LOCK TABLES, SET SESSION... through: the account's
        # privileges are a required layer there, not a second one.
        content += "; " + gettext(
            "warning: the account can change data (%(privileges)s); on MySQL and MariaDB a read-only "
            "transaction does not stop DDL, LOCK TABLES or SET SESSION: give read connectors an account "
            "with SELECT only"
        ) % {"privileges": ", ".join(privileges.writes)}
    return CallOutcome(status="ok", content=content, latency_ms=(time.perf_counter() - started) * 1000)
