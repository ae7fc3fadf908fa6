"""The PostgreSQL adapter against a real server on loopback (a scratch database per test session).

Also the database half of the free-form SQL defences: with the SQL guard bypassed (calling the
internal ``_execute`` directly), every write attempt of the corpus is refused or leaves nothing
behind, session state never reaches the next call, and a SELECT-only role is refused the
privileged functions.
"""

from __future__ import annotations

import datetime
import logging
import re
import secrets
import time
import tracemalloc
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest
from asgiref.sync import async_to_sync

from connectors.adapter_types import DatabaseConnectorConfig, SqlActionSpec
from connectors.sql import adapter as database
from connectors.sql.adapter import aclose_db_pools, db_call, db_test_connection
from connectors.sql.postgres import read as db_read
from connectors.sql.tables import MAX_CELL_CHARS, render_cell, render_table
from tests.connectors.sql.write_corpus import LEGITIMATE_READS, SETUP_SQL, WRITE_ATTEMPTS, Attempt

PG_HOST, PG_PORT = "127.0.0.1", 5432
ADMIN_DSN = f"host={PG_HOST} port={PG_PORT} user=postgres dbname=postgres connect_timeout=3"


@dataclass(frozen=True)
class ScratchDatabase:
    name: str
    reader: str  # a SELECT-only role

    def dsn(self, user: str = "postgres", **extra: str) -> str:
        params = {"host": PG_HOST, "port": str(PG_PORT), "user": user, "dbname": self.name, **extra}
        return " ".join(f"{k}={v}" for k, v in params.items())


@pytest.fixture(scope="session")
def scratch_db() -> Iterator[ScratchDatabase]:
    try:
        admin = psycopg.connect(ADMIN_DSN, autocommit=True)
    except psycopg.OperationalError as exc:
        pytest.skip(f"PostgreSQL is not reachable at {PG_HOST}:{PG_PORT} ({exc.__class__.__name__})")
    suffix = secrets.token_hex(4)
    db = ScratchDatabase(name=f"connectors_test_{suffix}", reader=f"connectors_reader_{suffix}")
    with admin:
        admin.execute(f"CREATE DATABASE {db.name}")
        admin.execute(f"CREATE ROLE {db.reader} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE")
        try:
            yield db
        finally:
            admin.execute(f"DROP DATABASE IF EXISTS {db.name} WITH (FORCE)")
            admin.execute(f"DROP ROLE IF EXISTS {db.reader}")


@pytest.fixture
def schema(scratch_db: ScratchDatabase) -> ScratchDatabase:
    """A fresh public schema with the corpus tables, readable (only) by the reader role."""
    with psycopg.connect(scratch_db.dsn(), autocommit=True) as conn:
        conn.execute("DROP SCHEMA IF EXISTS public CASCADE")
        conn.execute("CREATE SCHEMA public")
        conn.execute("SELECT lo_unlink(oid) FROM pg_largeobject_metadata")
        conn.execute(SETUP_SQL)
        conn.execute(f"GRANT USAGE ON SCHEMA public TO {scratch_db.reader}")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {scratch_db.reader}")
        conn.execute(f"GRANT SELECT ON ALL SEQUENCES IN SCHEMA public TO {scratch_db.reader}")
    return scratch_db


@pytest.fixture(autouse=True)
async def _close_pools() -> AsyncIterator[None]:
    yield
    await aclose_db_pools()


def make_config(
    db: ScratchDatabase, *, user: str = "postgres", **overrides: object
) -> DatabaseConnectorConfig:
    values: dict[str, object] = {
        "connector_id": f"db-{uuid.uuid4()}",
        "dsn": db.dsn(user),
        "allowed_private_hosts": (PG_HOST,),
        "pool_max_size": 1,
        "statement_timeout_ms": 2_000,
    }
    values.update(overrides)
    return DatabaseConnectorConfig(**values)  # type: ignore[arg-type]


def read(sql: str, **kwargs: object) -> SqlActionSpec:
    return SqlActionSpec(name="read", sql_template=sql, **kwargs)  # type: ignore[arg-type]


FREE_FORM = SqlActionSpec(name="query", free_form=True)


async def snapshot(db: ScratchDatabase) -> tuple[object, ...]:
    """Everything a write attempt could change in the scratch database."""
    async with await psycopg.AsyncConnection.connect(db.dsn(), autocommit=True) as conn:
        queries = (
            "SELECT id, name FROM guard_target ORDER BY id",
            "SELECT last_value, is_called FROM guard_seq",
            "SELECT relname, relkind FROM pg_class WHERE relnamespace = 'public'::regnamespace ORDER BY 1",
            "SELECT attname FROM pg_attribute WHERE attrelid = 'guard_target'::regclass AND attnum > 0 ORDER BY 1",
            "SELECT relacl::text, obj_description(oid) FROM pg_class WHERE oid = 'guard_target'::regclass",
            "SELECT count(*) FROM pg_largeobject_metadata",
        )
        return tuple([await (await conn.execute(q)).fetchall() for q in queries])


# --- reads, tables and caps ---------------------------------------------------------------------


async def test_read_template_binds_arguments_as_parameters_not_text(schema: ScratchDatabase) -> None:
    config = make_config(schema)
    action = read("SELECT id, name FROM guard_target WHERE name = %(name)s ORDER BY id")

    found = await db_call(config, action, {"name": "beta"})
    injected = await db_call(config, action, {"name": "beta' OR '1'='1"})

    assert found.status == "ok" and found.row_count == 1
    assert found.content == "id | name\n2 | beta\n(1 row)"
    assert injected.status == "ok" and injected.row_count == 0
    assert "(no rows)" in injected.content


async def test_missing_template_argument_is_a_clear_error(schema: ScratchDatabase) -> None:
    outcome = await db_call(make_config(schema), read("SELECT %(a)s::int + %(b)s::int"), {"a": 1})

    assert outcome.status == "error"
    assert outcome.error == "missing argument(s) for the query: b"


async def test_row_cap_returns_max_rows_and_says_more_exist(schema: ScratchDatabase) -> None:
    config = make_config(schema, max_rows=10)

    outcome = await db_call(config, FREE_FORM, {"sql": "SELECT n FROM generate_series(1, 100000) AS n"})

    assert outcome.status == "ok" and outcome.truncated
    assert outcome.row_count == 10
    lines = outcome.content.splitlines()
    assert lines[0] == "n" and lines[1:11] == [str(n) for n in range(1, 11)]
    assert lines[-1] == "(more rows not shown: only the first 10 rows are returned)"


async def test_size_cap_cuts_the_table_and_counts_rows_left_out(schema: ScratchDatabase) -> None:
    config = make_config(schema, max_rows=50, max_result_bytes=1_000)

    outcome = await db_call(
        config, FREE_FORM, {"sql": "SELECT n, repeat('x', 100) AS pad FROM generate_series(1, 20) n"}
    )

    assert outcome.status == "ok" and outcome.truncated
    assert len(outcome.content.encode()) <= 1_000
    footer = re.fullmatch(
        r"\(at least (\d+) more rows not shown: result size limit of 1000 bytes\)",
        outcome.content.splitlines()[-1],
    )
    assert footer is not None
    # Fetching stopped once the budget was spent: not every row of the statement was read.
    assert outcome.row_count + int(footer.group(1)) < 20


async def test_statement_timeout_is_reported_clearly(schema: ScratchDatabase) -> None:
    config = make_config(schema, statement_timeout_ms=200)

    outcome = await db_call(config, read("SELECT pg_sleep(5)"), {})

    assert outcome.status == "error"
    assert outcome.error == "statement timeout: the query ran longer than 200 ms and was cancelled"


async def test_connection_is_usable_after_a_statement_timeout(schema: ScratchDatabase) -> None:
    config = make_config(schema, statement_timeout_ms=200)
    await db_call(config, read("SELECT pg_sleep(5)"), {})

    outcome = await db_call(config, read("SELECT 42 AS answer"), {})

    assert outcome.status == "ok" and outcome.content == "answer\n42\n(1 row)"


def peak_rss_bytes() -> int:
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) * 1024  # type: ignore[union-attr]


def reset_peak_rss() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # Linux: the peak restarts from the current size


async def test_huge_values_are_cut_by_the_database_before_they_reach_the_process(
    schema: ScratchDatabase,
) -> None:
    # The query: ten 20 MB values under a 200 KB cap once raised the process's memory by 404 MB.
    config = make_config(schema, max_result_bytes=200_000, statement_timeout_ms=20_000)
    sql = "SELECT repeat('x', 20000000) AS big FROM generate_series(1, 10)"
    await db_call(config, FREE_FORM, {"sql": "SELECT 1"})  # the pool and its connection exist already
    reset_peak_rss()
    baseline = peak_rss_bytes()
    tracemalloc.start()
    try:
        outcome = await db_call(config, FREE_FORM, {"sql": sql})
        _, traced_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    grown = peak_rss_bytes() - baseline

    assert outcome.status == "ok", outcome.error
    assert traced_peak < 5 * config.max_result_bytes, traced_peak
    assert grown < 10 * config.max_result_bytes, grown
    assert len(outcome.content.encode()) <= config.max_result_bytes
    assert outcome.content.splitlines()[1] == "x" * (MAX_CELL_CHARS - 1) + "…"
    assert outcome.row_count == 10


async def test_statement_timeout_bounds_the_whole_read_not_each_fetch(schema: ScratchDatabase) -> None:
    # Every row takes 8 ms, so no single FETCH reaches the 500 ms timeout; the read as a whole does.
    config = make_config(schema, statement_timeout_ms=500, max_rows=200)
    sql = "SELECT n, pg_sleep(0.008) FROM generate_series(1, 200) AS n"
    started = time.monotonic()

    outcome = await database._execute(config, sql, None, write=False)
    elapsed = time.monotonic() - started

    assert outcome.status == "error"
    assert outcome.error == "statement timeout: the query ran longer than 500 ms and was cancelled"
    assert elapsed < 1.5
    assert (await db_call(config, read("SELECT 42 AS answer"), {})).content == "answer\n42\n(1 row)"


async def test_statement_timeout_holds_when_the_statement_switches_it_off(schema: ScratchDatabase) -> None:
    # With the guard bypassed: the first row turns the server's timeout off for every later FETCH.
    config = make_config(schema, statement_timeout_ms=500, max_rows=200)
    sql = (
        "SELECT n, CASE WHEN n = 1 THEN set_config('statement_timeout', '0', true)"
        " WHEN n > 50 THEN pg_sleep(0.03)::text END FROM generate_series(1, 150) AS n"
    )
    started = time.monotonic()

    outcome = await database._execute(config, sql, None, write=False)

    assert outcome.status == "error" and outcome.error.startswith("statement timeout:")
    assert time.monotonic() - started < 1.5


async def test_value_types_render_the_same_through_the_size_cut(schema: ScratchDatabase) -> None:
    sql = (
        "SELECT true AS t, 1.50::numeric AS n, date '2024-05-01' AS d, '{\"a\": [1]}'::jsonb AS j,"
        " NULL::text AS z, '\\x0001'::bytea AS b, ARRAY[1, 2] AS a, 'x' || repeat('y', 3000) AS long,"
        " decode(repeat('ab', 5000), 'hex') AS blob"
    )

    outcome = await db_call(make_config(schema), FREE_FORM, {"sql": sql})

    header, row = outcome.content.splitlines()[:2]
    assert header == "t | n | d | j | z | b | a | long | blob"
    assert row == (
        'true | 1.50 | 2024-05-01 | {"a":[1]} | NULL | <2 bytes> | [1,2] | x'
        + "y" * (MAX_CELL_CHARS - 2)
        + "… | <5000 bytes>"
    )


async def test_rows_of_duplicate_and_unnamed_columns_read_through_the_size_cut(
    schema: ScratchDatabase,
) -> None:
    outcome = await db_call(make_config(schema), read("SELECT 1 AS a, 2 AS a, 3, pg_sleep(0)"), {})

    assert outcome.content == "a | a | ?column? | pg_sleep\n1 | 2 | 3 | \n(1 row)"


async def test_a_statement_with_more_columns_than_can_be_read_is_a_clear_error(
    schema: ScratchDatabase,
) -> None:
    columns = ", ".join(f"{n} AS c{n}" for n in range(db_read.MAX_COLUMNS + 1))

    outcome = await db_call(make_config(schema), FREE_FORM, {"sql": f"SELECT {columns}"})

    assert outcome.status == "error"
    assert outcome.error == (
        f"the query returns {db_read.MAX_COLUMNS + 1} columns; at most {db_read.MAX_COLUMNS} can be read,"
        " select fewer columns"
    )


async def test_wide_rows_stop_at_the_size_budget(schema: ScratchDatabase) -> None:
    columns = ", ".join(f"repeat('v', 5000) AS c{n}" for n in range(100))
    config = make_config(schema, max_result_bytes=20_000, max_rows=200)

    await db_call(config, FREE_FORM, {"sql": "SELECT 1"})
    tracemalloc.start()
    try:
        # Guard bypassed: parsing a long statement costs memory by its text, not by its result.
        sql = f"SELECT {columns} FROM generate_series(1, 1000)"
        outcome = await database._execute(config, sql, None, write=False)
        _, traced_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert outcome.status == "ok" and outcome.truncated
    assert len(outcome.content.encode()) <= 20_000
    # Bounded by the budget, not by the 1,000 rows of 500 kB: the reader's buffers plus the redaction's
    # few working copies of the (budget-sized) text, which looks for every encoding of the DSN.
    assert traced_peak < 20 * config.max_result_bytes, traced_peak


async def test_an_allowed_built_in_name_is_the_built_in_whatever_the_roles_search_path(
    schema: ScratchDatabase,
) -> None:
    with psycopg.connect(schema.dsn(), autocommit=True) as conn:
        conn.execute(
            "CREATE FUNCTION public.lower(text) RETURNS text LANGUAGE sql AS $$ SELECT 'shadowed' $$"
        )
    config = make_config(schema, dsn=schema.dsn(options="-csearch_path=public,pg_catalog"))

    outcome = await db_call(config, FREE_FORM, {"sql": "SELECT lower('X') AS v"})

    assert outcome.content == "v\nx\n(1 row)"


# --- session reset --------------------------------------------------------------------------------


async def backend_pid(config: DatabaseConnectorConfig) -> str:
    outcome = await db_call(config, read("SELECT pg_backend_pid() AS pid"), {})
    return outcome.content.splitlines()[1]


async def test_set_config_in_a_committed_write_does_not_leak_into_the_next_call(
    schema: ScratchDatabase,
) -> None:
    config = make_config(schema)
    pid = await backend_pid(config)
    write = SqlActionSpec(name="w", sql_template="SELECT set_config('x.y', 'leak', false)", is_write=True)

    assert (await db_call(config, write, {})).status == "ok"
    seen = await db_call(config, read("SELECT coalesce(current_setting('x.y', true), '') AS v"), {})

    assert await backend_pid(config) == pid  # the same pooled connection served every call
    assert seen.content == "v\n\n(1 row)"


async def test_session_state_of_templated_calls_is_discarded_before_reuse(schema: ScratchDatabase) -> None:
    config = make_config(schema)
    pid = await backend_pid(config)
    await db_call(config, read("SELECT pg_advisory_lock(77)"), {})
    await db_call(config, read("SELECT set_config('x.y', 'leak', false)"), {})
    for sql in (
        "CREATE TEMP TABLE leak_tmp AS SELECT 1",
        "PREPARE leak_stmt AS SELECT 1",
        "LISTEN leak_channel",
    ):
        assert (
            await db_call(config, SqlActionSpec(name="w", sql_template=sql, is_write=True), {})
        ).status == "ok"

    state = await db_call(
        config,
        read(
            "SELECT coalesce(current_setting('x.y', true), '') AS setting,"
            " (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()) AS locks,"
            " (SELECT count(*) FROM pg_prepared_statements) AS prepared,"
            " (SELECT count(*) FROM pg_listening_channels()) AS listening,"
            " to_regclass('pg_temp.leak_tmp') IS NULL AS temp_gone"
        ),
        {},
    )

    assert await backend_pid(config) == pid
    assert state.content.splitlines()[1] == " | 0 | 0 | 0 | true"


async def test_locks_role_and_settings_of_a_call_are_gone_before_the_next_call(
    schema: ScratchDatabase,
) -> None:
    # Guard bypassed: whatever a statement leaves on its connection, DISCARD ALL takes back.
    config = make_config(schema)
    pid = await backend_pid(config)
    reads = (
        "SELECT pg_advisory_lock(1)",
        "SELECT pg_advisory_lock_shared(2)",
        "SELECT pg_advisory_xact_lock(3)",
        "SELECT pg_try_advisory_lock(4)",
        "SELECT * FROM ts_stat('SELECT to_tsvector(pg_advisory_lock(5)::text)')",
        "SELECT set_config('x.y', 'leak', false), set_config('lock_timeout', '1s', false)",
        "SELECT set_config('search_path', 'pg_temp', false), set_config('work_mem', '1GB', false)",
    )
    writes = (
        "SELECT pg_advisory_lock(6)",
        "SET application_name = 'leak'",
        "SET lock_timeout = '2s'",
        f"SET ROLE {schema.reader}",
    )
    for sql in reads:
        await database._execute(config, sql, None, write=False)
    for sql in writes:
        assert (await database._execute(config, sql, None, write=True)).status == "ok", sql

    state = await database._execute(
        config,
        "SELECT current_user, current_setting('search_path') AS path, current_setting('application_name') AS app,"
        " coalesce(current_setting('x.y', true), '') AS x, current_setting('lock_timeout') AS lock_timeout,"
        " current_setting('work_mem') <> '1GB' AS work_mem_reset",
        None,
        write=True,
    )
    async with await psycopg.AsyncConnection.connect(schema.dsn(), autocommit=True) as outside:
        held = await (
            await outside.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
                " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            )
        ).fetchone()

    assert await backend_pid(config) == pid  # one pooled connection served every call
    assert state.content.splitlines()[1] == 'postgres | "$user", public |  |  | 0 | true'
    assert held == (0,)


# --- writes -----------------------------------------------------------------------------------------


async def test_write_action_commits_and_reports_affected_rows(schema: ScratchDatabase) -> None:
    action = SqlActionSpec(
        name="add", sql_template="INSERT INTO guard_target VALUES (%(id)s, %(name)s)", is_write=True
    )

    outcome = await db_call(make_config(schema), action, {"id": 10, "name": "delta"})

    assert outcome.status == "ok" and outcome.row_count == 1
    assert outcome.content == "1 row(s) affected"
    assert (10, "delta") in (await snapshot(schema))[0]


async def test_write_action_with_returning_renders_the_returned_rows(schema: ScratchDatabase) -> None:
    action = SqlActionSpec(
        name="rename",
        sql_template="UPDATE guard_target SET name = upper(name) WHERE id <= %(max_id)s RETURNING id, name",
        is_write=True,
    )

    outcome = await db_call(make_config(schema), action, {"max_id": 2})

    assert outcome.status == "ok"
    assert outcome.content == "id | name\n1 | ALPHA\n2 | BETA\n(2 rows)"


async def test_failed_write_action_is_rolled_back(schema: ScratchDatabase) -> None:
    before = await snapshot(schema)
    action = SqlActionSpec(
        name="dup",
        sql_template="WITH d AS (DELETE FROM guard_target RETURNING id) INSERT INTO guard_target VALUES (1, 'x')",
        is_write=True,
    )

    outcome = await db_call(make_config(schema), action, {})

    assert outcome.status == "error" and outcome.error.startswith("database error:")
    assert await snapshot(schema) == before


async def test_read_action_whose_template_writes_is_refused_by_the_read_only_transaction(
    schema: ScratchDatabase,
) -> None:
    before = await snapshot(schema)

    outcome = await db_call(make_config(schema), read("SELECT guard_write()"), {})

    assert outcome.status == "error"
    assert outcome.error.startswith("refused: this action is read-only and the statement tries to write")
    assert await snapshot(schema) == before


# --- free-form SQL: guard first, database second ------------------------------------------------------


async def test_free_form_sql_refused_by_the_guard_never_reaches_the_database(schema: ScratchDatabase) -> None:
    unreachable = make_config(schema, dsn=schema.dsn(port="1"))  # nothing listens there

    outcome = await db_call(unreachable, FREE_FORM, {"sql": "DELETE FROM guard_target"})

    assert outcome.status == "error"
    assert outcome.error.startswith("refused by the SQL guard: DELETE is not a read query")


async def test_free_form_action_without_sql_is_a_clear_error(schema: ScratchDatabase) -> None:
    outcome = await db_call(make_config(schema), FREE_FORM, {})

    assert outcome.error == "free-form SQL needs the 'sql' argument"


@pytest.mark.parametrize("sql", LEGITIMATE_READS)
async def test_legitimate_free_form_reads_run(schema: ScratchDatabase, sql: str) -> None:
    outcome = await db_call(make_config(schema), FREE_FORM, {"sql": sql})

    assert outcome.status == "ok", outcome.error


async def test_user_function_that_writes_is_refused_by_the_guard_before_the_database(
    schema: ScratchDatabase,
) -> None:
    before = await snapshot(schema)

    outcome = await db_call(make_config(schema), FREE_FORM, {"sql": "SELECT guard_write()"})

    assert outcome.status == "error"
    assert outcome.error == (
        "refused by the SQL guard: calls guard_write(), which is not on the SQL guard's list of allowed"
        " read functions"
    )
    assert await snapshot(schema) == before


def corpus(kind: str) -> list[Attempt]:
    return [a for a in WRITE_ATTEMPTS if a.db == kind]


@pytest.mark.parametrize("attempt", corpus("refuses"), ids=lambda a: a.why)
async def test_database_alone_refuses_write_attempt(schema: ScratchDatabase, attempt: Attempt) -> None:
    # As a superuser, so the refusal owes nothing to privileges: only to the read-only execution.
    config = make_config(schema, statement_timeout_ms=500)
    before = await snapshot(schema)

    outcome = await database._execute(config, attempt.sql, None, write=False)

    assert outcome.status == "error", f"the database ran {attempt.sql!r}"
    assert await snapshot(schema) == before


@pytest.mark.parametrize("attempt", corpus("rolls_back"), ids=lambda a: a.why)
async def test_database_alone_leaves_nothing_of_a_rolled_back_attempt(
    schema: ScratchDatabase, attempt: Attempt
) -> None:
    before = await snapshot(schema)

    await database._execute(make_config(schema), attempt.sql, None, write=False)

    assert await snapshot(schema) == before


@pytest.mark.parametrize("attempt", corpus("resets"), ids=lambda a: a.why)
async def test_database_alone_keeps_session_state_from_the_next_call(
    schema: ScratchDatabase, attempt: Attempt
) -> None:
    config = make_config(schema)
    pid = await backend_pid(config)

    await database._execute(config, attempt.sql, None, write=False)
    state = await database._execute(
        config,
        "SELECT coalesce(current_setting('connectors.leak', true), '') AS setting,"
        " current_setting('default_transaction_read_only') AS default_ro,"
        " (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()) AS locks,"
        " (SELECT count(*) FROM pg_prepared_statements) AS prepared,"
        " (SELECT count(*) FROM pg_listening_channels()) AS listening",
        None,
        write=False,
    )

    assert await backend_pid(config) == pid
    assert state.content.splitlines()[1] == " | off | 0 | 0 | 0"


@pytest.mark.parametrize("attempt", corpus("guard_only"), ids=lambda a: a.why)
async def test_guard_keeps_other_sessions_of_the_same_role_alive(
    schema: ScratchDatabase, attempt: Attempt
) -> None:
    # A role may end and cancel its own sessions, so the database cannot stop this: the guard must.
    config = make_config(schema, user=schema.reader)
    async with await psycopg.AsyncConnection.connect(schema.dsn(schema.reader), autocommit=True) as bystander:
        outcome = await db_call(config, FREE_FORM, {"sql": attempt.sql})

        assert (await (await bystander.execute("SELECT 1")).fetchone()) == (1,)

    assert outcome.status == "error"
    assert outcome.error.startswith("refused by the SQL guard: calls ")


@pytest.mark.parametrize("attempt", corpus("role_refuses"), ids=lambda a: a.why)
async def test_select_only_role_is_refused_privileged_functions(
    schema: ScratchDatabase, attempt: Attempt
) -> None:
    config = make_config(schema, user=schema.reader)
    # A superuser session in the same database: the target the kill/cancel attempts would hit.
    async with await psycopg.AsyncConnection.connect(schema.dsn(), autocommit=True) as bystander:
        outcome = await database._execute(config, attempt.sql, None, write=False)
        assert (await (await bystander.execute("SELECT 1")).fetchone()) == (1,)

    assert outcome.status == "error"
    assert outcome.error.startswith("permission denied")


async def test_select_only_role_reads_through_a_read_connector(schema: ScratchDatabase) -> None:
    outcome = await db_call(
        make_config(schema, user=schema.reader), FREE_FORM, {"sql": "SELECT count(*) FROM guard_target"}
    )

    assert outcome.content == "count\n3\n(1 row)"


# --- SSRF, DSNs, secrets, test connection ---------------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "0.0.0.0"])
async def test_dsn_host_is_checked_by_the_ssrf_guard(schema: ScratchDatabase, host: str) -> None:
    config = make_config(schema, dsn=schema.dsn(host=host), allowed_private_hosts=())

    outcome = await db_call(config, read("SELECT 1"), {})
    tested = await db_test_connection(config)

    assert outcome.status == tested.status == "error"
    assert outcome.error.startswith("blocked by the SSRF guard")
    assert tested.error.startswith("blocked by the SSRF guard")


@pytest.mark.parametrize(
    ("dsn_extra", "message"),
    [
        ({"hostaddr": "127.0.0.1"}, "the DSN must not set 'hostaddr'"),
        ({"service": "prod"}, "the DSN must not set 'service'"),
        (
            {"host": "/var/run/postgresql"},
            "unix-socket hosts are not supported; use a TCP host name or address",
        ),
    ],
)
async def test_dsn_that_could_bypass_the_guard_is_refused(
    schema: ScratchDatabase, dsn_extra: dict[str, str], message: str
) -> None:
    outcome = await db_call(make_config(schema, dsn=schema.dsn(**dsn_extra)), read("SELECT 1"), {})

    assert outcome.error == message


async def test_secrets_never_appear_in_outcomes_or_logs(
    schema: ScratchDatabase, caplog: pytest.LogCaptureFixture
) -> None:
    password = "pw-" + secrets.token_hex(8)
    caplog.set_level(logging.DEBUG)
    wrong_db = make_config(schema, dsn=schema.dsn(password=password, dbname="no_such_db"))
    unparsable = make_config(schema, dsn=f"host=127.0.0.1 password={password} dbname='unterminated")
    echo = make_config(schema, dsn=schema.dsn(password=password))

    outcomes = [
        await db_call(wrong_db, read("SELECT 1"), {}),
        await db_test_connection(wrong_db),
        await db_call(unparsable, read("SELECT 1"), {}),
        await db_call(echo, read("SELECT %(p)s::text AS echoed"), {"p": password}),
        await db_call(echo, read("SELECT %(p)s::int"), {"p": password}),
    ]

    assert outcomes[0].status == "error" and outcomes[2].error == "the DSN could not be parsed"
    for outcome in outcomes:
        assert password not in outcome.content + outcome.error
    assert password not in caplog.text


async def test_unreachable_database_is_reported_with_the_reason(schema: ScratchDatabase) -> None:
    config = make_config(schema, dsn=schema.dsn(port="1"), connect_timeout=0.5, statement_timeout_ms=200)

    outcome = await db_call(config, read("SELECT 1"), {})

    assert outcome.status == "error"
    assert outcome.error.startswith("could not connect to the database: connection failed:")
    assert "Connection refused" in outcome.error


async def test_test_connection_reports_the_server_and_warns_about_superusers(schema: ScratchDatabase) -> None:
    as_superuser = await db_test_connection(make_config(schema))
    as_reader = await db_test_connection(make_config(schema, user=schema.reader))
    refused = await db_test_connection(make_config(schema, dsn=schema.dsn(port="1")))

    assert as_superuser.status == "ok" and as_superuser.content.startswith("connected: PostgreSQL ")
    assert "the role is a superuser" in as_superuser.content
    assert as_reader.status == "ok" and "superuser" not in as_reader.content
    assert refused.status == "error" and "Connection refused" in refused.error


async def test_changed_dsn_gets_a_new_pool(schema: ScratchDatabase) -> None:
    config = make_config(schema)
    assert (await db_call(config, read("SELECT current_user AS u"), {})).content == "u\npostgres\n(1 row)"

    changed = DatabaseConnectorConfig(
        connector_id=config.connector_id, dsn=schema.dsn(schema.reader), allowed_private_hosts=(PG_HOST,)
    )

    assert (
        await db_call(changed, read("SELECT current_user AS u"), {})
    ).content == f"u\n{schema.reader}\n(1 row)"


# --- table rendering (no database) ------------------------------------------------------------------------


def test_cells_render_compactly_on_one_line() -> None:
    assert render_cell(None) == "NULL"
    assert render_cell(True) == "true"
    assert render_cell(Decimal("12.50")) == "12.50"
    assert render_cell(datetime.date(2024, 5, 1)) == "2024-05-01"
    assert render_cell({"a": [1, "é"]}) == '{"a":[1,"é"]}'
    assert render_cell(b"\x00\x01") == "<2 bytes>"
    assert render_cell("two\nlines | pipe") == "two\\nlines \\| pipe"
    assert render_cell("x" * 1000) == "x" * (MAX_CELL_CHARS - 1) + "…"


def test_empty_result_keeps_its_header() -> None:
    table = render_table(["id", "name"], [], more_rows=False, max_bytes=1000)

    assert table.text == "id | name\n(no rows)"
    assert not table.truncated


def test_test_connection_works_from_sync_code_in_throwaway_loops(schema: ScratchDatabase) -> None:
    config = make_config(schema)

    results = [async_to_sync(db_test_connection)(config) for _ in range(2)]

    assert [r.status for r in results] == ["ok", "ok"]
