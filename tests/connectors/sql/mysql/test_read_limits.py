"""MySQL/MariaDB reads within the budget: the server cuts long values and caps the rows, so a capped
read leaves nothing to drain and its pooled connection is reused (against the local MariaDB)."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from connectors.adapter_types import DatabaseConnectorConfig, SqlActionSpec
from connectors.sql.adapter import aclose_db_pools, db_call
from connectors.sql.mysql import pool as mysql_pool
from connectors.sql.mysql.adapter import mysql_execute
from connectors.sql.tables import MAX_CELL_CHARS, CutValue
from tests.connectors.sql.mysql.test_adapter import HOST, PORT, _run, run_sync

FREE_FORM = SqlActionSpec(name="query", free_form=True)
HUGE = 5_000_000


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    try:
        run_sync(["SELECT 1"])
    except Exception as exc:  # noqa: BLE001  (any failure to connect means: no server to test against)
        pytest.skip(f"MariaDB/MySQL is not reachable at {HOST}:{PORT} as root ({type(exc).__name__}: {exc})")
    name = f"part_d_{secrets.token_hex(4)}"
    run_sync([f"CREATE DATABASE {name}"])
    try:
        run_sync(
            [
                f"CREATE TABLE {name}.nums (id INT PRIMARY KEY, label VARCHAR(20))",
                f"INSERT INTO {name}.nums SELECT seq, CONCAT('n', seq) FROM seq_1_to_300",
                f"CREATE TABLE {name}.big (id INT PRIMARY KEY, body LONGTEXT, data LONGBLOB)",
                f"INSERT INTO {name}.big VALUES (1, REPEAT('x', {HUGE}), REPEAT(X'00', {HUGE})), (2, 'short', X'0102')",
            ],
            name,
        )
        yield name
    finally:
        run_sync([f"DROP DATABASE IF EXISTS {name}"])


@pytest.fixture(autouse=True)
async def _close_pools() -> AsyncIterator[None]:
    yield
    await aclose_db_pools()


def config_for(database: str, **overrides: Any) -> DatabaseConnectorConfig:
    values: dict[str, Any] = {
        "connector_id": f"mysql-{uuid.uuid4()}",
        "dsn": f"mysql://root@{HOST}:{PORT}/{database}",
        "engine": "mariadb",
        "allowed_private_hosts": (HOST,),
        "pool_max_size": 1,
        "statement_timeout_ms": 3_000,
    }
    values.update(overrides)
    return DatabaseConnectorConfig(**values)


async def connection_id(config: DatabaseConnectorConfig) -> int:
    return (await mysql_execute(config, "SELECT CONNECTION_ID()", None, write=False)).rows[0][0]


async def test_a_huge_value_is_cut_by_the_server_and_marked_as_cut(database: str) -> None:
    config = config_for(database, max_result_bytes=4_000)

    result = await mysql_execute(config, "SELECT id, body, data FROM big ORDER BY id", None, write=False)

    (one, body, data), (two, short, small) = result.rows
    assert isinstance(body, CutValue) and body.head == "x" * len(body.head)
    assert 0 < len(body.head) <= MAX_CELL_CHARS
    assert data == CutValue(byte_count=HUGE)
    assert (one, two, short, small) == (1, 2, "short", b"\x01\x02")


async def test_a_cut_value_is_shown_as_cut_and_the_result_size_limit_holds(database: str) -> None:
    config = config_for(database, max_result_bytes=2_000)

    outcome = await db_call(config, FREE_FORM, {"sql": "SELECT id, body, data FROM big ORDER BY id"})

    assert outcome.status == "ok", outcome.error
    assert len(outcome.content.encode()) <= 2_000
    assert "xxxx…" in outcome.content and f"<{HUGE} bytes>" in outcome.content
    assert "short" in outcome.content


async def test_a_capped_read_gives_its_connection_back_to_the_pool(database: str) -> None:
    config = config_for(database, max_rows=3)
    before = await connection_id(config)

    outcome = await db_call(config, FREE_FORM, {"sql": "SELECT a.id FROM nums a, nums b"})  # 90,000 rows
    after = await connection_id(config)

    assert outcome.status == "ok" and outcome.row_count == 3 and outcome.truncated
    pool = await mysql_pool.mysql_pool_for(config)
    assert after == before and pool.connections_made == 1


async def test_a_read_stopped_by_the_size_budget_gives_its_connection_back(database: str) -> None:
    config = config_for(database, max_rows=200, max_result_bytes=1_000)
    before = await connection_id(config)

    outcome = await db_call(config, FREE_FORM, {"sql": "SELECT id, REPEAT('y', 200) FROM nums"})

    assert outcome.status == "ok" and outcome.truncated
    assert await connection_id(config) == before


async def test_the_statements_order_and_its_own_limit_are_kept(database: str) -> None:
    config = config_for(database, max_rows=5)

    ordered = await mysql_execute(config, "SELECT id FROM nums ORDER BY id DESC", None, write=False)
    limited = await mysql_execute(
        config, "SELECT id FROM nums ORDER BY id LIMIT 2 OFFSET 10;", None, write=False
    )
    unioned = await mysql_execute(
        config,
        "SELECT id FROM nums WHERE id < 3 UNION ALL SELECT id FROM nums WHERE id > 298 ORDER BY id DESC",
        None,
        write=False,
    )
    with_cte = await mysql_execute(
        config,
        "WITH t AS (SELECT id FROM nums) SELECT id FROM t ORDER BY id DESC -- newest",
        None,
        write=False,
    )

    assert [r[0] for r in ordered.rows] == [300, 299, 298, 297, 296] and ordered.more_rows
    assert [r[0] for r in limited.rows] == [11, 12] and not limited.more_rows
    assert [r[0] for r in unioned.rows] == [300, 299, 2, 1] and not unioned.more_rows
    assert [r[0] for r in with_cte.rows] == [300, 299, 298, 297, 296]


async def test_duplicate_column_names_are_read_as_they_are(database: str) -> None:
    config = config_for(database, max_rows=2)

    result = await mysql_execute(
        config, "SELECT a.id, b.id FROM nums a JOIN nums b ON a.id = b.id ORDER BY a.id", None, write=False
    )

    assert result.columns == ("id", "id") and result.rows == ((1, 1), (2, 2)) and result.more_rows


async def test_bound_arguments_reach_the_wrapped_read(database: str) -> None:
    config = config_for(database)
    action = SqlActionSpec(name="label", sql_template="SELECT label FROM nums WHERE id = %(id)s")

    outcome = await db_call(config, action, {"id": 42})

    assert outcome.status == "ok" and "n42" in outcome.content


async def test_the_cut_values_keep_their_types(database: str) -> None:
    config = config_for(database)
    await _run(
        [
            "CREATE TABLE IF NOT EXISTS typed (d DECIMAL(10,2), t DATETIME, j JSON, b BOOLEAN, n INT)",
            "DELETE FROM typed",
            "INSERT INTO typed VALUES (12.50, '2026-01-02 03:04:05', '{\"a\": 1}', TRUE, NULL)",
        ],
        database,
    )

    result = await mysql_execute(config, "SELECT d, t, j, b, n FROM typed", None, write=False)

    d, t, j, b, n = result.rows[0]
    assert (str(d), t.isoformat(), j, b, n) == ("12.50", "2026-01-02T03:04:05", '{"a": 1}', 1, None)
