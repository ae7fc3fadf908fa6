"""Demo seeder of a read-only database connector, when ``settings.DEMO_DATABASE_URL`` names a server.

On that PostgreSQL or MariaDB/MySQL server (the operator's, reached directly: it is configuration,
not an admin's input) it creates a small purchasing schema (suppliers, purchase orders and their
lines) and a SELECT-only account ``demo_reader`` with a new random password, then gives the demo
organisation a ``purchasing`` connector on that account with a free-form query action and the schema
tools, limited to the demo schema, samples allowed. Running it again refreshes the account's
password and the connector's DSN and leaves the data alone. ``make prod`` points it at the local
PostgreSQL; without the setting the demo keeps to the in-project API.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

import asyncmy
import psycopg
from psycopg import sql

from connectors.models import Connector, ConnectorAction, DatabaseEngine
from connectors.services import connector_save
from connectors.sql.mysql.dsn import is_mysql_dsn, parse_mysql_dsn
from platform_core.models import Organization

DEMO_DATABASE_CONNECTOR = "purchasing"
DEMO_SCHEMA = "demo_purchasing"  # PostgreSQL's schema; on MySQL the tables go into the URL's database
DEMO_READER = "demo_reader"

_TABLES = (
    "CREATE TABLE IF NOT EXISTS {p}suppliers (id INT PRIMARY KEY, name VARCHAR(80) NOT NULL,"
    " city VARCHAR(40) NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {p}purchase_orders (id INT PRIMARY KEY, supplier_id INT NOT NULL"
    " REFERENCES {p}suppliers (id), ordered_on DATE NOT NULL, status VARCHAR(20) NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {p}order_lines (order_id INT NOT NULL REFERENCES {p}purchase_orders (id),"
    " line INT NOT NULL, item VARCHAR(80) NOT NULL, quantity INT NOT NULL, unit_price DECIMAL(12, 2) NOT NULL,"
    " PRIMARY KEY (order_id, line))",
)
_ROWS = (
    "INSERT INTO {p}suppliers VALUES (1, 'Shenzhen Bright Electronics', 'Shenzhen'),"
    " (2, 'Hangzhou Tea Supply Co.', 'Hangzhou'), (3, 'Nordic Office AB', 'Stockholm')",
    "INSERT INTO {p}purchase_orders VALUES (1001, 1, '2026-09-02', 'received'), (1002, 2, '2026-10-11', 'open'),"
    " (1003, 3, '2026-10-20', 'approved'), (1004, 1, '2026-11-05', 'open')",
    "INSERT INTO {p}order_lines VALUES (1001, 1, 'LED panel 60x60', 200, 93.00), (1002, 1, 'Longjing tea 250 g', 40,"
    " 32.01), (1003, 1, 'Standing desk', 10, 940.00), (1004, 1, 'LED driver', 150, 12.40), (1004, 2, 'Cable set',"
    " 150, 3.10)",
)


@dataclass(frozen=True, slots=True)
class DemoDatabase:
    """Where the demo connector reads: its DSN (the reader's), engine, host and schema."""

    dsn: str
    engine: str
    host: str
    schema: str


def _seed_postgres(url: str, password: str, reader: str) -> DemoDatabase:
    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(DEMO_SCHEMA)))
        prefix = f"{DEMO_SCHEMA}."
        for statement in _TABLES:
            conn.execute(statement.format(p=prefix))
        if conn.execute(f"SELECT count(*) FROM {prefix}suppliers").fetchone() == (0,):
            for statement in _ROWS:
                conn.execute(statement.format(p=prefix))
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (reader,)).fetchone()
        verb = "ALTER" if exists else "CREATE"
        conn.execute(
            sql.SQL(verb + " ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD {}").format(
                sql.Identifier(reader), sql.Literal(password)
            )
        )
        database = conn.info.dbname
        conn.execute(
            sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(
                sql.Identifier(database), sql.Identifier(reader)
            )
        )
        conn.execute(
            sql.SQL(
                "GRANT USAGE ON SCHEMA {0} TO {1}; GRANT SELECT ON ALL TABLES IN SCHEMA {0} TO {1}"
            ).format(sql.Identifier(DEMO_SCHEMA), sql.Identifier(reader))
        )
        host, port = conn.info.host, conn.info.port
    dsn = f"postgresql://{reader}:{quote(password, safe='')}@{host}:{port}/{quote(database, safe='')}"
    return DemoDatabase(dsn=dsn, engine=DatabaseEngine.POSTGRESQL, host=host, schema=DEMO_SCHEMA)


async def _seed_mysql(url: str, password: str, reader: str) -> DemoDatabase:
    target = parse_mysql_dsn(url)
    conn = await asyncmy.connect(
        host=target.host,
        port=target.port,
        user=target.user,
        password=target.password,
        database=target.database,
        autocommit=True,
        connect_timeout=5,
    )
    try:
        async with conn.cursor() as cursor:
            for statement in _TABLES:
                await cursor.execute(statement.format(p="demo_"))
            await cursor.execute("SELECT COUNT(*) FROM demo_suppliers")
            if (await cursor.fetchone())[0] == 0:
                for statement in _ROWS:
                    await cursor.execute(statement.format(p="demo_"))
            await cursor.execute("CREATE USER IF NOT EXISTS %s@'%%' IDENTIFIED BY %s", (reader, password))
            await cursor.execute("ALTER USER %s@'%%' IDENTIFIED BY %s", (reader, password))
            database = "`" + target.database.replace("`", "``") + "`"
            for table in ("demo_suppliers", "demo_purchase_orders", "demo_order_lines"):
                await cursor.execute(f"GRANT SELECT ON {database}.{table} TO %s@'%%'", (reader,))
    finally:
        conn.close()
    scheme = urlsplit(url).scheme.lower()
    dsn = (
        f"{scheme}://{reader}:{quote(password, safe='')}@{target.host}:{target.port}/"
        f"{quote(target.database, safe='')}"
    )
    engine = DatabaseEngine.MARIADB if scheme == "mariadb" else DatabaseEngine.MYSQL
    return DemoDatabase(dsn=dsn, engine=engine, host=target.host, schema=target.database)


def demo_database_seed(org: Organization, url: str, *, reader: str = DEMO_READER) -> Connector:
    """Create the demo schema and the SELECT-only account ``reader`` on the server at ``url``, and the
    organisation's ``purchasing`` connector reading through it."""
    password = f"demo-{secrets.token_urlsafe(18)}"
    if is_mysql_dsn(url):
        demo = asyncio.run(_seed_mysql(url, password, reader))
        allow = [f"{demo.schema}.{t}" for t in ("demo_suppliers", "demo_purchase_orders", "demo_order_lines")]
    else:
        demo = _seed_postgres(url, password, reader)
        allow = [demo.schema]
    connector = Connector.objects.filter(organization=org, name=DEMO_DATABASE_CONNECTOR).first() or Connector(
        organization=org,
        name=DEMO_DATABASE_CONNECTOR,
        description="The demo purchasing database: suppliers, purchase orders and their lines (read-only).",
        kind="database",
    )
    connector.engine = demo.engine
    connector.allowed_private_hosts = [demo.host]
    connector.schema_allow_list = allow
    connector.schema_samples = True
    connector_save(connector=connector, actor=None, secrets={"dsn": demo.dsn})
    if not ConnectorAction.objects.filter(connector=connector, name="query").exists():
        ConnectorAction.objects.create(
            connector=connector,
            organization_id=org.pk,
            name="query",
            description="Run one read-only SQL query on the purchasing database.",
            free_form=True,
        )
    return connector
