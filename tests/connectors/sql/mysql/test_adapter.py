"""The MySQL/MariaDB adapter against the real MariaDB server on loopback.

Each test session makes its own database and a SELECT-only account (``part_n_*``) and drops them at
the end; the tests skip when no server answers at 127.0.0.1:3306. With the SQL guard bypassed
(``connectors.sql.mysql.adapter.mysql_execute``), each layer of the database holds the write corpus alone:
the READ ONLY transaction the data changes, the SELECT-only account everything else, the reset
between calls the session state, the statement timeout the sleeps.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import datetime
import secrets
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import asyncmy
import pytest
from django.utils import translation

from connectors.adapter_types import DatabaseConnectorConfig, SqlActionSpec
from connectors.sql.adapter import aclose_db_pools, db_call, db_test_connection
from connectors.sql.mysql import pool as mysql_pool
from connectors.sql.mysql.adapter import mysql_execute
from connectors.sql.mysql.dsn import parse_mysql_dsn
from connectors.sql.postgres.dsn import DsnError
from tests.connectors.sql.mysql.write_corpus import (
    LEGITIMATE_READS,
    SETUP_STATEMENTS,
    WRITE_ATTEMPTS,
    Attempt,
)

HOST, PORT = "127.0.0.1", 3306


async def _root(database: str | None = None) -> asyncmy.Connection:
    return await asyncmy.connect(
        host=HOST, port=PORT, user="root", password="", database=database, autocommit=True, connect_timeout=3
    )


async def _run(statements: list[str], database: str | None = None) -> list[Any]:
    conn = await _root(database)
    results = []
    try:
        async with conn.cursor() as cursor:
            for sql in statements:
                await cursor.execute(sql)
                results.append(await cursor.fetchall())
    finally:
        conn.close()
    return results


def run_sync(statements: list[str], database: str | None = None) -> list[Any]:
    """:func:`_run` from sync code, in a thread of its own (a test's event loop may be running)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, _run(statements, database)).result()


@dataclass(frozen=True)
class Scratch:
    name: str
    reader: str
    reader_password: str

    def dsn(self, *, reader: bool = False, **query: str) -> str:
        auth = f"{self.reader}:{self.reader_password}" if reader else "root"
        tail = "&".join(f"{k}={v}" for k, v in query.items())
        return f"mysql://{auth}@{HOST}:{PORT}/{self.name}" + (f"?{tail}" if tail else "")


@pytest.fixture(scope="session")
def scratch() -> Iterator[Scratch]:
    try:
        run_sync(["SELECT 1"])
    except Exception as exc:  # noqa: BLE001  (any failure to connect means: no server to test against)
        pytest.skip(f"MariaDB/MySQL is not reachable at {HOST}:{PORT} as root ({type(exc).__name__}: {exc})")
    suffix = secrets.token_hex(4)
    db = Scratch(f"part_n_{suffix}", f"part_n_r_{suffix}", f"pw-{secrets.token_hex(8)}")
    run_sync(
        [
            f"CREATE DATABASE {db.name}",
            f"CREATE USER '{db.reader}'@'%' IDENTIFIED BY '{db.reader_password}'",
            f"GRANT SELECT ON {db.name}.* TO '{db.reader}'@'%'",
        ]
    )
    try:
        yield db
    finally:
        run_sync([f"DROP DATABASE IF EXISTS {db.name}", f"DROP USER IF EXISTS '{db.reader}'@'%'"])


@pytest.fixture
async def schema(scratch: Scratch) -> Scratch:
    """Fresh corpus tables in the scratch database."""
    tables = ["guard_target", "guard_orders", "evil", "moved", "types"]
    await _run(
        [f"DROP TABLE IF EXISTS {t}" for t in tables]
        + [
            "DROP VIEW IF EXISTS evil_view",
            "DROP PROCEDURE IF EXISTS guard_proc",
            "DROP FUNCTION IF EXISTS guard_write",
        ]
        + list(SETUP_STATEMENTS),
        scratch.name,
    )
    return scratch


@pytest.fixture(autouse=True)
async def _close_pools() -> AsyncIterator[None]:
    yield
    await aclose_db_pools()


def make_config(
    db: Scratch, *, reader: bool = False, dsn: str | None = None, **overrides: Any
) -> DatabaseConnectorConfig:
    values: dict[str, Any] = {
        "connector_id": f"mysql-{uuid.uuid4()}",
        "dsn": dsn or db.dsn(reader=reader),
        "engine": "mariadb",
        "allowed_private_hosts": (HOST,),
        "pool_max_size": 1,
        "statement_timeout_ms": 1_500,
    }
    values.update(overrides)
    return DatabaseConnectorConfig(**values)


def read(sql: str) -> SqlActionSpec:
    return SqlActionSpec(name="read", sql_template=sql)


FREE_FORM = SqlActionSpec(name="query", free_form=True)


async def snapshot(db: Scratch) -> list[Any]:
    """Everything a write attempt could change in the scratch database (and the server's settings)."""
    return await _run(
        [
            "SELECT id, name FROM guard_target ORDER BY id",
            "SELECT table_name, table_type FROM information_schema.tables"
            f" WHERE table_schema = '{db.name}' ORDER BY 1",
            f"SELECT column_name FROM information_schema.columns WHERE table_schema = '{db.name}'"
            " AND table_name = 'guard_target' ORDER BY 1",
            f"SELECT COUNT(*) FROM mysql.user WHERE user = '{db.reader}'",
            "SELECT @@GLOBAL.max_connections",
        ],
        db.name,
    )


# --- reads, types and caps ----------------------------------------------------------------------


async def test_read_template_binds_arguments_as_escaped_values_not_text(schema: Scratch) -> None:
    config = make_config(schema)
    action = read("SELECT id, name FROM guard_target WHERE name = %(name)s ORDER BY id")

    found = await db_call(config, action, {"name": "beta"})
    injected = await db_call(config, action, {"name": "beta' OR '1'='1"})
    escaped = await db_call(config, action, {"name": "beta\\' OR 1=1 -- "})

    assert found.status == "ok" and found.content == "id | name\n2 | beta\n(1 row)"
    assert injected.status == "ok" and injected.row_count == 0
    assert escaped.status == "ok" and escaped.row_count == 0


async def test_missing_template_argument_is_a_clear_error(schema: Scratch) -> None:
    outcome = await db_call(make_config(schema), read("SELECT %(a)s + %(b)s"), {"a": 1})

    assert outcome.status == "error" and outcome.error == "missing argument(s) for the query: b"


async def test_values_of_every_common_type_render_compactly(schema: Scratch) -> None:
    await _run(
        [
            "CREATE TABLE types (d DECIMAL(10, 3), day DATE, at DATETIME(3), t TIME, j JSON,"
            " b VARBINARY(8), n INT NULL, s VARCHAR(20))",
            "INSERT INTO types VALUES (12.5, '2024-02-29', '2024-02-29 13:14:15.250', '01:02:03',"
            " '{\"a\": [1, 2]}', X'00FF10', NULL, 'a|b')",
        ],
        schema.name,
    )

    outcome = await db_call(make_config(schema), FREE_FORM, {"sql": "SELECT * FROM types"})

    assert outcome.status == "ok", outcome.error
    assert outcome.content.splitlines()[1] == (
        '12.500 | 2024-02-29 | 2024-02-29T13:14:15.250000 | 1:02:03 | {"a": [1, 2]} | <3 bytes> | NULL | a\\|b'
    )


async def test_driver_values_keep_their_python_types(schema: Scratch) -> None:
    result = await mysql_execute(
        make_config(schema),
        "SELECT amount, created_at, data, NULL FROM guard_orders WHERE id = 1",
        None,
        write=False,
    )

    amount, created, data, null = result.rows[0]
    assert isinstance(amount, Decimal) and amount == Decimal("120.50")
    assert isinstance(created, datetime.datetime)
    assert '"city"' in data and null is None


async def test_row_cap_returns_max_rows_and_says_more_exist(schema: Scratch) -> None:
    config = make_config(schema, max_rows=2)

    outcome = await db_call(config, FREE_FORM, {"sql": "SELECT id FROM guard_orders ORDER BY id"})

    assert outcome.status == "ok" and outcome.row_count == 2 and outcome.truncated
    assert outcome.content.endswith("(more rows not shown: only the first 2 rows are returned)")


async def test_size_cap_cuts_the_table(schema: Scratch) -> None:
    config = make_config(schema, max_result_bytes=1_000)
    sql = "SELECT REPEAT('x', 300) AS pad FROM guard_orders"

    outcome = await db_call(config, FREE_FORM, {"sql": sql})

    assert outcome.status == "ok" and outcome.truncated
    assert len(outcome.content.encode()) <= 1_000
    assert "result size limit of 1000 bytes" in outcome.content


async def test_a_long_result_left_unread_does_not_block_the_next_call(schema: Scratch) -> None:
    config = make_config(schema, max_rows=1)
    many = "SELECT a.id FROM guard_orders a, guard_orders b, guard_orders c, guard_orders d"

    first = await db_call(config, FREE_FORM, {"sql": many})
    second = await db_call(config, FREE_FORM, {"sql": "SELECT COUNT(*) FROM guard_target"})

    assert first.status == "ok" and first.truncated
    assert second.status == "ok" and "3" in second.content


@pytest.mark.parametrize("sql", LEGITIMATE_READS)
async def test_legitimate_free_form_reads_run(schema: Scratch, sql: str) -> None:
    outcome = await db_call(make_config(schema, reader=True), FREE_FORM, {"sql": sql})

    assert outcome.status == "ok", outcome.error


# --- timeouts ---------------------------------------------------------------------------------


async def test_statement_timeout_is_reported_and_the_server_ends_the_query(schema: Scratch) -> None:
    config = make_config(schema, statement_timeout_ms=300)
    started = asyncio.get_running_loop().time()

    with pytest.raises(Exception) as raised:
        await mysql_execute(config, "SELECT SLEEP(5) FROM guard_target", None, write=False)
    outcome = await db_call(config, read("SELECT SLEEP(5) FROM guard_target"), {})

    assert asyncio.get_running_loop().time() - started < 4
    assert raised.value.args[0] == 1969  # max_statement_time exceeded
    assert outcome.status == "error" and outcome.error.startswith("statement timeout")
    after = await db_call(config, read("SELECT 1"), {})
    assert after.status == "ok"


async def test_unreachable_server_is_reported_with_the_reason(schema: Scratch) -> None:
    config = make_config(schema, dsn=f"mysql://root@{HOST}:1/{schema.name}", connect_timeout=2)

    outcome = await db_call(config, read("SELECT 1"), {})

    assert outcome.status == "error" and outcome.error.startswith("could not connect to the database")


# --- the database's layers alone -----------------------------------------------------------------


def corpus(*layers: str) -> list[Attempt]:
    return [a for a in WRITE_ATTEMPTS if a.db in layers]


@pytest.mark.parametrize("attempt", corpus("read_only"), ids=lambda a: a.why)
async def test_read_only_transaction_alone_refuses_data_changes(schema: Scratch, attempt: Attempt) -> None:
    before = await snapshot(schema)

    with pytest.raises(asyncmy.errors.Error) as raised:
        await mysql_execute(make_config(schema), attempt.sql, None, write=False)  # root may write

    assert raised.value.args[0] in (1792, 1064), raised.value  # read-only transaction / a second statement
    assert await snapshot(schema) == before


@pytest.mark.parametrize("attempt", corpus("read_only", "account"), ids=lambda a: a.why)
async def test_select_only_account_alone_refuses_every_write(schema: Scratch, attempt: Attempt) -> None:
    before = await snapshot(schema)
    config = make_config(schema, reader=True)

    try:
        result = await mysql_execute(config, attempt.sql, None, write=True)  # not even read-only
    except asyncmy.errors.Error as exc:
        assert exc.args[0] in (1044, 1045, 1064, 1142, 1143, 1227, 1370, 1792), exc
    else:
        assert result.rows in ((), ((None,),)), result  # LOAD_FILE without the FILE privilege: NULL
    assert await snapshot(schema) == before


@pytest.mark.parametrize("attempt", corpus("resets"), ids=lambda a: a.why)
async def test_session_state_of_a_call_is_gone_before_the_next_call(
    schema: Scratch, attempt: Attempt
) -> None:
    config = make_config(schema)
    probe = (
        "SELECT @v, IS_USED_LOCK('part_n_lock') IS NULL, @@SESSION.sql_mode LIKE '%NO_BACKSLASH_ESCAPES%',"
        " CONNECTION_ID()"
    )
    try:
        await mysql_execute(config, attempt.sql, None, write=False)
    except asyncmy.errors.Error:
        pass

    result = await mysql_execute(config, probe, None, write=False)
    variable, lock_free, no_backslash, _ = result.rows[0]
    assert variable is None and lock_free == 1 and no_backslash == 0


async def test_an_open_handler_does_not_survive_the_reset(schema: Scratch) -> None:
    config = make_config(schema)
    await mysql_execute(config, "HANDLER guard_target OPEN", None, write=False)

    with pytest.raises(asyncmy.errors.Error) as raised:
        await mysql_execute(config, "HANDLER guard_target READ FIRST", None, write=False)

    assert raised.value.args[0] == 1109  # unknown table in HANDLER: the reset closed it


@pytest.mark.parametrize("attempt", corpus("timeout"), ids=lambda a: a.why)
async def test_statement_timeout_alone_ends_what_nothing_else_refuses(
    schema: Scratch, attempt: Attempt
) -> None:
    config = make_config(schema, statement_timeout_ms=300)
    started = asyncio.get_running_loop().time()

    try:
        await mysql_execute(config, attempt.sql, None, write=False)
    except asyncmy.errors.Error as exc:
        assert exc.args[0] in (1969, 1317), exc

    assert asyncio.get_running_loop().time() - started < 3


async def test_free_form_sql_refused_by_the_guard_never_reaches_the_database(schema: Scratch) -> None:
    before = await snapshot(schema)

    outcome = await db_call(make_config(schema), FREE_FORM, {"sql": "DELETE FROM guard_target"})

    assert outcome.status == "error" and outcome.error.startswith("refused by the SQL guard")
    assert await snapshot(schema) == before


async def test_read_action_whose_template_writes_is_refused_by_the_read_only_transaction(
    schema: Scratch,
) -> None:
    outcome = await db_call(make_config(schema), read("DELETE FROM guard_target"), {})

    assert outcome.status == "error" and outcome.error.startswith("refused: this action is read-only")


# --- writes -------------------------------------------------------------------------------------


async def test_write_action_commits_and_reports_affected_rows(schema: Scratch) -> None:
    action = SqlActionSpec(
        name="rename", sql_template="UPDATE guard_target SET name = %(name)s WHERE id = %(id)s", is_write=True
    )

    outcome = await db_call(make_config(schema), action, {"name": "ALPHA", "id": 1})

    assert outcome.status == "ok" and outcome.content == "1 row(s) affected"
    assert (await snapshot(schema))[0][0] == (1, "ALPHA")


async def test_failed_write_action_is_rolled_back(schema: Scratch) -> None:
    action = SqlActionSpec(
        name="two",
        sql_template="INSERT INTO guard_target VALUES (%(id)s, 'new'), (1, 'duplicate')",
        is_write=True,
    )
    before = await snapshot(schema)

    outcome = await db_call(make_config(schema), action, {"id": 50})

    assert outcome.status == "error" and "Duplicate entry" in outcome.error
    assert await snapshot(schema) == before


# --- the pool -----------------------------------------------------------------------------------


async def connection_id(config: DatabaseConnectorConfig) -> int:
    return (await mysql_execute(config, "SELECT CONNECTION_ID()", None, write=False)).rows[0][0]


async def test_pool_reuses_one_connection_across_calls(schema: Scratch) -> None:
    config = make_config(schema)

    ids = [await connection_id(config) for _ in range(3)]
    pool = await mysql_pool.mysql_pool_for(config)

    assert len(set(ids)) == 1 and pool.connections_made == 1


async def test_pool_recovers_when_the_server_kills_its_connection(schema: Scratch) -> None:
    config = make_config(schema)
    killed = await connection_id(config)
    await _run([f"KILL {killed}"])

    outcome = await db_call(config, read("SELECT COUNT(*) FROM guard_target"), {})
    replacement = await connection_id(config)

    assert outcome.status == "ok" and "3" in outcome.content
    assert replacement != killed


async def test_a_changed_dsn_gets_a_new_pool(schema: Scratch) -> None:
    config = make_config(schema)
    first = await mysql_pool.mysql_pool_for(config)
    changed = dataclasses.replace(config, dsn=schema.dsn(reader=True))

    second = await mysql_pool.mysql_pool_for(changed)

    assert first is not second and await connection_id(changed) > 0


# --- the DSN, the SSRF guard, test connection and secrets ------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]"])
async def test_dsn_host_is_checked_by_the_ssrf_guard(schema: Scratch, host: str) -> None:
    config = make_config(schema, dsn=f"mysql://root@{host}:3306/{schema.name}", allowed_private_hosts=())

    outcome = await db_call(config, read("SELECT 1"), {})

    assert outcome.status == "error" and outcome.error.startswith("blocked by the SSRF guard")


@pytest.mark.parametrize(
    "dsn",
    [
        "mysql://root@/db",
        "mysql://root@host:3306/",
        "mysql://root@host/db?unix_socket=/run/mysqld.sock",
        "mysql://root@host/db?ssl_mode=sometimes",
        "mysql://root@host/db?read_default_file=/etc/my.cnf",
        "postgresql://root@host/db",
    ],
)
def test_dsn_that_the_adapter_cannot_use_safely_is_refused(dsn: str) -> None:
    with pytest.raises(DsnError) as raised:
        parse_mysql_dsn(dsn)

    assert dsn not in str(raised.value)


def test_dsn_parts_are_read_with_escapes() -> None:
    parsed = parse_mysql_dsn("mariadb://app%40x:p%2Fw@db.example:3307/shop?ssl-mode=VERIFY_IDENTITY")

    assert (parsed.user, parsed.password, parsed.host, parsed.port, parsed.database, parsed.ssl_mode) == (
        "app@x",
        "p/w",
        "db.example",
        3307,
        "shop",
        "verify_identity",
    )


async def test_tls_required_against_a_server_without_tls_fails_clearly(schema: Scratch) -> None:
    have_tls = (await _run(["SELECT @@have_ssl"]))[0][0][0]
    if have_tls == "YES":
        pytest.skip("this server offers TLS")
    config = make_config(schema, dsn=schema.dsn(ssl_mode="required"))

    outcome = await db_test_connection(config)

    assert outcome.status == "error" and outcome.error.startswith("could not connect to the database")


async def test_test_connection_reports_the_server_and_warns_about_accounts_that_write(
    schema: Scratch,
) -> None:
    as_root = await db_test_connection(make_config(schema))
    as_reader = await db_test_connection(make_config(schema, reader=True))

    assert as_root.status == "ok" and as_root.content.startswith("connected: MariaDB ")
    assert "warning: the account can change data (ALL PRIVILEGES" in as_root.content
    assert as_reader.status == "ok" and "warning" not in as_reader.content


# What each account of the Test connection tests holds (issue #31): ``None`` is a SELECT-only account.
ACCOUNTS: dict[str, str | None] = {
    "reader": None,
    "reader with a read-only role": None,
    "insert and update": "INSERT, UPDATE",
    "lock tables only": "LOCK TABLES",
    "a writer role, not active": "INSERT",
    "a writer role, active by default": "INSERT",
}


@pytest.fixture(scope="module")
def accounts(scratch: Scratch) -> Iterator[dict[str, str]]:
    """One account per entry of :data:`ACCOUNTS` on the scratch database, by name; their DSNs."""
    suffix = secrets.token_hex(3)
    password = f"pw-{secrets.token_hex(8)}"
    users = {name: f"part_n_a{i}_{suffix}" for i, name in enumerate(ACCOUNTS)}
    reading_role, writing_role = f"part_n_rr_{suffix}", f"part_n_wr_{suffix}"
    on = f"ON {scratch.name}.*"
    statements = [
        f"CREATE ROLE {reading_role}",
        f"GRANT SELECT, SHOW VIEW {on} TO {reading_role}",
        f"CREATE ROLE {writing_role}",
        f"GRANT SELECT, INSERT {on} TO {writing_role}",
    ]
    for user in users.values():
        statements += [
            f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'",
            f"GRANT SELECT {on} TO '{user}'@'%'",
        ]
    grants = {
        "reader with a read-only role": [
            f"GRANT {reading_role} TO '{{u}}'@'%'",
            f"SET DEFAULT ROLE {reading_role} FOR '{{u}}'@'%'",
        ],
        "insert and update": [f"GRANT INSERT, UPDATE {on} TO '{{u}}'@'%'"],
        "lock tables only": [f"GRANT LOCK TABLES {on} TO '{{u}}'@'%'"],
        "a writer role, not active": [f"GRANT {writing_role} TO '{{u}}'@'%'"],
        "a writer role, active by default": [
            f"GRANT {writing_role} TO '{{u}}'@'%'",
            f"SET DEFAULT ROLE {writing_role} FOR '{{u}}'@'%'",
        ],
    }
    for name, lines in grants.items():
        statements += [line.format(u=users[name]) for line in lines]
    run_sync(statements)
    try:
        yield {
            name: f"mysql://{user}:{password}@{HOST}:{PORT}/{scratch.name}" for name, user in users.items()
        }
    finally:
        run_sync(
            [f"DROP USER IF EXISTS '{user}'@'%'" for user in users.values()]
            + [f"DROP ROLE IF EXISTS {reading_role}", f"DROP ROLE IF EXISTS {writing_role}"]
        )


@pytest.mark.parametrize("account", ACCOUNTS)
async def test_test_connection_warns_in_the_users_language_when_the_account_can_write(
    schema: Scratch, accounts: dict[str, str], account: str
) -> None:
    # given an account holding SELECT, and maybe more, on the connector's database
    config = make_config(schema, dsn=accounts[account])

    # when an admin reading Chinese tests the connection
    with translation.override("zh-hans"):
        outcome = await db_test_connection(config)

    # then it works, and warns exactly when the account may do more than read, naming what
    assert outcome.status == "ok", outcome.error
    writes = ACCOUNTS[account]
    if writes is None:
        assert "警告" not in outcome.content and "warning" not in outcome.content
    else:
        assert "警告：该账号可以修改数据" in outcome.content
        assert writes in outcome.content


async def test_the_password_never_appears_in_outcomes(schema: Scratch) -> None:
    wrong = make_config(schema, dsn=f"mysql://{schema.reader}:{schema.reader_password}@{HOST}:{PORT}/nope")

    outcomes = [
        await db_call(wrong, read("SELECT 1"), {}),
        await db_test_connection(wrong),
        await db_call(make_config(schema, reader=True), FREE_FORM, {"sql": "SELECT * FROM nope"}),
    ]

    for outcome in outcomes:
        assert outcome.status == "error"
        assert schema.reader_password not in outcome.error and schema.reader_password not in outcome.content
