"""Schema tools of database connectors (list_tables, describe_table) against the real PostgreSQL and
MariaDB servers: what the account can read, comments and estimated rows, columns and keys, sample
rows only when allowed, the schema/table allow list (also enforced by the SQL guard), the cache and
its invalidation by Test connection."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from connectors.adapter_types import DatabaseConnectorConfig, SqlActionSpec
from connectors.sql.adapter import aclose_db_pools, db_call, db_test_connection
from tests.connectors.sql.mysql.test_adapter import Scratch, _run, run_sync, scratch  # noqa: F401  (fixture)
from tests.connectors.sql.test_adapter import ScratchDatabase, scratch_db  # noqa: F401  (fixture)

LIST = SqlActionSpec(name="list_tables", schema_tool="list_tables")
DESCRIBE = SqlActionSpec(name="describe_table", schema_tool="describe_table")
FREE_FORM = SqlActionSpec(name="query", free_form=True)

PG_SETUP = """
DROP SCHEMA IF EXISTS sales CASCADE; DROP SCHEMA IF EXISTS hr CASCADE;
CREATE SCHEMA sales; CREATE SCHEMA hr;
CREATE TABLE sales.customers (id int PRIMARY KEY, name text NOT NULL);
CREATE TABLE sales.orders (id int PRIMARY KEY, customer_id int REFERENCES sales.customers (id),
  total numeric(10, 2), note text);
COMMENT ON TABLE sales.orders IS 'one row per purchase order';
COMMENT ON COLUMN sales.orders.total IS 'gross, in CNY';
INSERT INTO sales.customers VALUES (1, 'Acme'), (2, 'Globex');
INSERT INTO sales.orders VALUES (10, 1, 99.50, 'first'), (11, 2, 10.00, NULL);
ANALYZE sales.orders;
CREATE VIEW sales.big_orders AS SELECT * FROM sales.orders WHERE total > 50;
CREATE TABLE hr.salaries (id int PRIMARY KEY, amount int);
"""

MYSQL_SETUP = [
    "DROP TABLE IF EXISTS orders",
    "DROP TABLE IF EXISTS customers",
    "DROP TABLE IF EXISTS salaries",
    "CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR(40) NOT NULL)",
    "CREATE TABLE orders (id INT PRIMARY KEY, customer_id INT, total DECIMAL(10, 2) COMMENT 'gross, in CNY',"
    " note TEXT, FOREIGN KEY (customer_id) REFERENCES customers (id)) COMMENT 'one row per purchase order'",
    "CREATE TABLE salaries (id INT PRIMARY KEY, amount INT)",
    "INSERT INTO customers VALUES (1, 'Acme'), (2, 'Globex')",
    "INSERT INTO orders VALUES (10, 1, 99.50, 'first'), (11, 2, 10.00, NULL)",
    "ANALYZE TABLE orders",
]


@pytest.fixture(autouse=True)
async def _close_pools() -> AsyncIterator[None]:
    yield
    await aclose_db_pools()


@pytest.fixture(params=["postgresql", "mariadb"])
def db(request: pytest.FixtureRequest) -> dict[str, Any]:
    """A connector config per engine on the same little sales schema, and the names it uses."""
    if request.param == "postgresql":
        pg: ScratchDatabase = request.getfixturevalue("scratch_db")
        with psycopg.connect(pg.dsn(), autocommit=True) as conn:
            conn.execute(PG_SETUP)
        config = DatabaseConnectorConfig(
            connector_id=f"db-{uuid.uuid4()}", dsn=pg.dsn(), allowed_private_hosts=("127.0.0.1",)
        )
        return {"config": config, "sales": "sales", "hr": "hr", "engine": "postgresql"}
    maria: Scratch = request.getfixturevalue("scratch")
    run_sync(MYSQL_SETUP, maria.name)
    config = DatabaseConnectorConfig(
        connector_id=f"db-{uuid.uuid4()}",
        dsn=maria.dsn(),
        engine="mariadb",
        allowed_private_hosts=("127.0.0.1",),
    )
    # MySQL's schemas are databases: the scratch database plays "sales" and "hr" both.
    return {"config": config, "sales": maria.name, "hr": maria.name, "engine": "mariadb"}


def with_(config: DatabaseConnectorConfig, **changes: Any) -> DatabaseConnectorConfig:
    return dataclasses.replace(config, **changes)


async def test_list_tables_shows_tables_and_views_with_comments_and_estimated_rows(
    db: dict[str, Any],
) -> None:
    outcome = await db_call(db["config"], LIST, {})

    assert outcome.status == "ok", outcome.error
    lines = outcome.content.splitlines()
    assert lines[0] == "schema | name | kind | estimated_rows | comment"
    orders = next(line for line in lines if f"{db['sales']} | orders |" in line)
    assert orders.endswith("| table | 2 | one row per purchase order")
    if db["engine"] == "postgresql":
        assert "sales | big_orders | view | NULL | NULL" in lines


async def test_describe_table_gives_columns_types_nullability_keys_and_comments(db: dict[str, Any]) -> None:
    outcome = await db_call(db["config"], DESCRIBE, {"schema": db["sales"], "table": "orders"})

    assert outcome.status == "ok", outcome.error
    text = outcome.content
    assert text.splitlines()[0] == f"{db['sales']}.orders"
    assert "column | type | nullable | key | comment" in text
    assert any(line.startswith("id | int") and "| no | primary" in line for line in text.splitlines())
    assert any(line.startswith("total | ") and line.endswith("gross, in CNY") for line in text.splitlines())
    assert "keys:" in text and "customers" in text  # the foreign key names its target
    assert "sample rows" not in text  # samples are off unless the admin allows them


async def test_sample_rows_only_when_the_admin_allows_them(db: dict[str, Any]) -> None:
    allowed = with_(db["config"], schema_samples=True)

    outcome = await db_call(allowed, DESCRIBE, {"schema": db["sales"], "table": "orders"})

    assert outcome.status == "ok", outcome.error
    sample = outcome.content.split("sample rows:\n", 1)[1]
    assert sample.splitlines()[0] == "id | customer_id | total | note"
    assert "10 | 1 | 99.50 | first" in sample


async def test_the_allow_list_hides_other_tables_from_every_tool_and_the_guard(db: dict[str, Any]) -> None:
    limited = with_(db["config"], allowed_tables=(f"{db['sales']}.orders", f"{db['sales']}.customers"))

    listing = await db_call(limited, LIST, {})
    hidden = await db_call(limited, DESCRIBE, {"schema": db["hr"], "table": "salaries"})
    query = await db_call(limited, FREE_FORM, {"sql": f"SELECT * FROM {db['hr']}.salaries"})
    subquery = await db_call(
        limited,
        FREE_FORM,
        {"sql": f"SELECT (SELECT max(amount) FROM {db['hr']}.salaries) FROM {db['sales']}.orders"},
    )
    visible = await db_call(limited, FREE_FORM, {"sql": f"SELECT count(*) FROM {db['sales']}.orders"})

    assert listing.status == "ok" and "salaries" not in listing.content and "orders" in listing.content
    assert hidden.status == "error" and "is available on this connector" in hidden.error
    for refused in (query, subquery):
        assert refused.status == "error"
        assert refused.error.startswith("refused by the SQL guard: reads ") and "salaries" in refused.error
    assert visible.status == "ok" and "2" in visible.content


async def test_answers_are_cached_until_test_connection_clears_them(db: dict[str, Any]) -> None:
    config = with_(db["config"], schema_cache_seconds=600)
    first = await db_call(config, LIST, {})
    if db["engine"] == "postgresql":
        await asyncio.to_thread(
            lambda: psycopg.connect(config.dsn, autocommit=True).execute("CREATE TABLE sales.added (id int)")
        )
    else:
        await _run(["CREATE TABLE added (id INT)"], db["sales"])

    cached = await db_call(config, LIST, {})
    tested = await db_test_connection(config)
    fresh = await db_call(config, LIST, {})

    assert "added" not in first.content and cached.content == first.content
    assert tested.status == "ok"
    assert "added" in fresh.content
    if db["engine"] == "mariadb":
        await _run(["DROP TABLE added"], db["sales"])


async def test_no_cache_when_the_time_is_zero(db: dict[str, Any]) -> None:
    config = with_(db["config"], schema_cache_seconds=0)
    await db_call(config, LIST, {})
    if db["engine"] == "postgresql":
        await asyncio.to_thread(
            lambda: psycopg.connect(config.dsn, autocommit=True).execute("CREATE TABLE sales.added (id int)")
        )
    else:
        await _run(["CREATE TABLE added (id INT)"], db["sales"])

    again = await db_call(config, LIST, {})

    assert "added" in again.content
    if db["engine"] == "mariadb":
        await _run(["DROP TABLE added"], db["sales"])


async def test_describe_table_of_an_unknown_table_is_a_clear_error(db: dict[str, Any]) -> None:
    outcome = await db_call(db["config"], DESCRIBE, {"schema": db["sales"], "table": "nope"})
    missing = await db_call(db["config"], DESCRIBE, {})

    assert outcome.status == "error" and "that this account can read" in outcome.error
    assert missing.status == "error" and "needs the 'table' argument" in missing.error
