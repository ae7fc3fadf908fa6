"""seed_demo's read-only database connector on a real PostgreSQL and MariaDB: the purchasing schema, a
SELECT-only account, the connector with its schema tools, limited to the demo schema."""

from __future__ import annotations

import secrets

import psycopg
import pytest
from asgiref.sync import async_to_sync

from connectors.configs import database_config_for, sql_action_spec_for
from connectors.database import aclose_db_pools, db_call
from connectors.demo_database import demo_database_seed
from connectors.demo_seed import demo_connector_seed
from connectors.models import Connector, ConnectorAction
from tests.connectors.test_database_adapter import ScratchDatabase, scratch_db  # noqa: F401  (fixture)
from tests.connectors.test_mysql_adapter import Scratch, run_sync, scratch  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


def _call(connector: Connector, action_name: str, args: dict) -> object:
    action = ConnectorAction.objects.unscoped().get(connector=connector, name=action_name)

    async def run():
        try:
            return await db_call(database_config_for(connector), sql_action_spec_for(action), args)
        finally:
            await aclose_db_pools()

    return async_to_sync(run)()


@pytest.fixture
def pg_url(scratch_db: ScratchDatabase):  # noqa: F811
    reader = f"part_n_demo_{secrets.token_hex(3)}"
    yield f"postgresql://postgres@127.0.0.1:5432/{scratch_db.name}", reader
    with psycopg.connect(scratch_db.dsn(), autocommit=True) as conn:
        conn.execute("DROP SCHEMA IF EXISTS demo_purchasing CASCADE")
        conn.execute(f"DROP OWNED BY {reader}")
        conn.execute(f"DROP ROLE IF EXISTS {reader}")


@pytest.fixture
def maria_url(scratch: Scratch):  # noqa: F811
    reader = f"part_n_demo_{secrets.token_hex(3)}"
    yield f"mariadb://root@127.0.0.1:3306/{scratch.name}", reader
    run_sync([f"DROP USER IF EXISTS '{reader}'@'%'"])


@pytest.mark.parametrize("server", ["pg_url", "maria_url"])
def test_the_demo_database_connector_reads_the_purchasing_schema_as_a_reader(
    org, request: pytest.FixtureRequest, server: str
) -> None:
    url, reader = request.getfixturevalue(server)

    connector = demo_database_seed(org, url, reader=reader)
    again = demo_database_seed(org, url, reader=reader)  # idempotent: same connector, new password

    assert again.pk == connector.pk
    connector.refresh_from_db()
    assert connector.dsn.split("://", 1)[1].startswith(f"{reader}:")
    names = sorted(
        ConnectorAction.objects.unscoped().filter(connector=connector).values_list("name", flat=True)
    )
    assert names == ["describe_table", "list_tables", "query"]
    listing = _call(connector, "list_tables", {})
    assert listing.status == "ok", listing.error
    assert "purchase_orders" in listing.content and "suppliers" in listing.content
    total = _call(
        connector,
        "query",
        {
            "sql": "SELECT COUNT(*) AS n FROM "
            + ("demo_purchasing.order_lines" if server == "pg_url" else "demo_order_lines")
        },
    )
    assert total.status == "ok" and total.content.splitlines()[1] == "5"


def test_without_a_demo_database_the_demo_keeps_to_the_in_project_api(org, settings) -> None:
    settings.DEMO_DATABASE_URL = ""
    settings.DEMO_API_BASE_URL = "http://127.0.0.1:8000/demo-api"

    demo_connector_seed(org)

    assert not Connector.objects.unscoped().filter(organization=org, name="purchasing").exists()
