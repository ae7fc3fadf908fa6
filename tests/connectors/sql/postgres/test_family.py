"""The PostgreSQL family (KingbaseES, openGauss, HighGo): the PostgreSQL adapter, guard and schema tools
serve them, and Test connection names the server that answered. Only PostgreSQL itself is available
here, so the products are recognised from their version() texts as they print them."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from connectors.adapter_types import DatabaseConnectorConfig, SqlActionSpec
from connectors.sql.adapter import aclose_db_pools, db_call, db_test_connection
from connectors.sql.guard import classify_sql, guard_family
from connectors.sql.postgres.family import product_of, server_summary
from tests.connectors.sql.test_adapter import ScratchDatabase, scratch_db  # noqa: F401  (fixture)


@pytest.fixture(autouse=True)
async def _close_pools() -> AsyncIterator[None]:
    yield
    await aclose_db_pools()


@pytest.mark.parametrize(
    ("version", "engine"),
    [
        ("PostgreSQL 15.20 (Debian 15.20-0+deb12u1) on x86_64-pc-linux-gnu", "postgresql"),
        ("KingbaseES V008R006C008B0014 on x86_64-pc-linux-gnu, compiled by gcc (GCC) 4.8.5", "kingbase"),
        ("(openGauss 5.0.1 build 33b035fd) compiled at 2023-12-15 20:34:15 commit 0 last mr", "opengauss"),
        ("PostgreSQL 9.2.4 (GaussDB Kernel V500R002C10 build 04ef6e38) compiled at 2022-08-31", "opengauss"),
        ("HighGo Security Enterprise Edition Release 4.5.7 on x86_64-pc-linux-gnu", "highgo"),
    ],
)
def test_each_product_is_recognised_from_its_version_text(version: str, engine: str) -> None:
    assert product_of(version) == engine


def test_a_server_that_is_not_the_chosen_product_is_named_with_a_warning() -> None:
    assert server_summary("postgresql", "PostgreSQL 15.20", "15.20") == "PostgreSQL 15.20"
    assert server_summary("kingbase", "KingbaseES V008R006", "12.1") == "KingbaseES 12.1"
    assert server_summary("highgo", "PostgreSQL 15.20", "15.20") == (
        "PostgreSQL 15.20 (warning: the server says it is PostgreSQL, not HighGo)"
    )


@pytest.mark.parametrize("engine", ["kingbase", "opengauss", "highgo"])
def test_the_family_is_guarded_in_the_postgresql_dialect(engine: str) -> None:
    assert guard_family(engine) == "postgresql"
    assert classify_sql("SELECT pg_catalog.lower('A')", engine=engine).is_single_read
    assert not classify_sql("DELETE FROM t", engine=engine).is_single_read


@pytest.mark.parametrize("engine", ["kingbase", "opengauss", "highgo"])
async def test_a_family_connector_reads_tests_and_lists_tables_through_the_postgresql_adapter(
    scratch_db: ScratchDatabase,  # noqa: F811
    engine: str,
) -> None:
    config = DatabaseConnectorConfig(
        connector_id=f"db-{uuid.uuid4()}",
        dsn=scratch_db.dsn(),
        engine=engine,
        allowed_private_hosts=("127.0.0.1",),
    )

    read = await db_call(config, SqlActionSpec(name="q", free_form=True), {"sql": "SELECT 1 AS one"})
    tested = await db_test_connection(config)
    listing = await db_call(config, SqlActionSpec(name="list_tables", schema_tool="list_tables"), {})

    assert read.status == "ok" and read.content == "one\n1\n(1 row)"
    assert tested.status == "ok" and "warning: the server says it is PostgreSQL" in tested.content
    assert listing.status == "ok" and listing.content.startswith("schema | name | kind")
