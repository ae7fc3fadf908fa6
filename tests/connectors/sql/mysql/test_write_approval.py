"""A MySQL/MariaDB write action goes through the same guard rails as an HTTP write: an approval policy
holds it, and after the approval it runs exactly once against the real server; read-only mode refuses
it before it reaches the database."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator
from typing import Any

import asyncmy
import pytest
from channels.db import database_sync_to_async

from agents import runtime
from connectors.adapter_types import ConnectionFailed, ConnectionWorks
from connectors.models import ConnectorCallLog
from connectors.services import connector_test_connection
from connectors.sql.adapter import aclose_db_pools
from connectors.tools import connector_tools_for_run
from hooks.models import ApprovalRequest
from hooks.services import approval_decide
from platform_core.services import organization_set_read_only
from tests.eager_tasks import tasks_run_eagerly
from tests.factories import ConnectorActionFactory, ConnectorFactory
from tests.fakes.http_service import running_http_service
from tests.fakes.openai_server import call, text, tool_calls
from tests.hooks.factories import ApprovalPolicyFactory
from tests.hooks.harness import Emitted, run_agent
from tests.hooks.scenario import build_purchasing

pytestmark = pytest.mark.django_db(transaction=True)

HOST, PORT = "127.0.0.1", 3306


async def _sql(statements: list[str], database: str | None = None) -> list[Any]:
    conn = await asyncmy.connect(
        host=HOST, port=PORT, user="root", password="", database=database, autocommit=True, connect_timeout=3
    )
    try:
        results = []
        async with conn.cursor() as cursor:
            for sql in statements:
                await cursor.execute(sql)
                results.append(await cursor.fetchall())
        return results
    finally:
        conn.close()


@pytest.fixture
def shop_db() -> Iterator[str]:
    try:
        asyncio.run(_sql(["SELECT 1"]))
    except Exception as exc:  # noqa: BLE001  (any failure to connect means: no server to test against)
        pytest.skip(f"MariaDB/MySQL is not reachable at {HOST}:{PORT} as root ({type(exc).__name__}: {exc})")
    name = f"part_n_{secrets.token_hex(4)}"
    asyncio.run(
        _sql(
            [
                f"CREATE DATABASE {name}",
                f"CREATE TABLE {name}.payments (id INT AUTO_INCREMENT PRIMARY KEY, amount DECIMAL(12, 2),"
                " currency CHAR(3))",
            ]
        )
    )
    try:
        yield name
    finally:
        asyncio.run(_sql([f"DROP DATABASE IF EXISTS {name}"]))


@pytest.fixture(autouse=True)
def guard_rail_setup(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The platform's own tool builder, and Celery tasks (the approval cards) run eagerly."""
    monkeypatch.setattr(runtime, "connector_tools_for_run", connector_tools_for_run)
    with tasks_run_eagerly():
        yield


@pytest.fixture
async def world(scripted_llm: Any, shop_db: str) -> Any:
    def build() -> Any:
        with running_http_service() as erp:
            world = build_purchasing(llm_base_url=scripted_llm.base_url, erp_base_url=erp.base_url)
        ledger = world.ledger
        ledger.engine = "mariadb"
        ledger.dsn = f"mysql://root@{HOST}:{PORT}/{shop_db}"
        ledger.save()
        world.actions["record_payment"] = ConnectorActionFactory(
            connector=ledger,
            name="record_payment",
            method="",
            path_template="",
            sql_template="INSERT INTO payments (amount, currency) VALUES (%(amount)s, %(currency)s)",
            parameters={
                "type": "object",
                "properties": {"amount": {"type": "number"}, "currency": {"type": "string"}},
                "required": ["amount", "currency"],
            },
        )
        ApprovalPolicyFactory(
            organization=world.org,
            actions=[world.actions["record_payment"]],
            approver_users=[world.approver],
            approver_open_ids=[],
        )
        return world

    built = await database_sync_to_async(build)()
    yield built
    await aclose_db_pools()


async def test_a_mysql_write_held_by_an_approval_runs_exactly_once_after_approval(
    world: Any, scripted_llm: Any, make_llm: Any, shop_db: str
) -> None:
    assert world.actions["record_payment"].is_write  # derived from the SQL in MySQL's dialect
    scripted_llm.script(
        tool_calls(call("ledger__record_payment", {"amount": 60000, "currency": "CNY"}, id="pay")),
        text("Recorded."),
    )
    emitted = Emitted()
    run = asyncio.create_task(run_agent(world, make_llm, "Record the payment", emit=emitted))
    try:
        pending = await emitted.next_approval()
        assert pending["status"] == "pending" and pending["tool_name"] == "ledger__record_payment"
        assert (await _sql(["SELECT COUNT(*) FROM payments"], shop_db))[0][0][0] == 0  # held, not run
        approval = await ApprovalRequest.objects.unscoped().aget(pk=pending["approval_id"])
        await database_sync_to_async(approval_decide)(
            approval=approval, decision="approve", via="web", actor=world.approver, comment="ok"
        )
        result = await run
    finally:
        if not run.done():
            run.cancel()

    assert [c.outcome for c in result.tool_calls] == ["ok"]
    rows = (await _sql(["SELECT amount, currency FROM payments"], shop_db))[0]
    assert [(str(amount), currency) for amount, currency in rows] == [("60000.00", "CNY")]
    log = await ConnectorCallLog.objects.unscoped().aget(tool_call_id="pay")
    assert log.status == "ok" and log.is_write and log.approval_ref == str(approval.pk)


async def test_read_only_mode_refuses_a_mysql_write_before_the_database(
    world: Any, scripted_llm: Any, make_llm: Any, shop_db: str
) -> None:
    await database_sync_to_async(organization_set_read_only)(
        organization=world.org, actor=None, enabled=True, reason="month-end close"
    )
    scripted_llm.script(
        tool_calls(call("ledger__record_payment", {"amount": 10, "currency": "CNY"}, id="pay")),
        text("Could not."),
    )

    result = await run_agent(world, make_llm, "Record the payment")

    assert [c.outcome for c in result.tool_calls] == ["blocked"]
    assert (await _sql(["SELECT COUNT(*) FROM payments"], shop_db))[0][0][0] == 0
    assert await ApprovalRequest.objects.unscoped().acount() == 0


def test_test_connection_of_a_mariadb_connector_reports_the_server(org, shop_db: str) -> None:
    shop = {
        "organization": org,
        "kind": "database",
        "base_url": "",
        "engine": "mariadb",
        "dsn": f"mysql://root@{HOST}:{PORT}/{shop_db}",
    }
    connector = ConnectorFactory(name="shop", allowed_private_hosts=[HOST], **shop)
    refused = ConnectorFactory(name="shop_public_only", **shop)

    result = connector_test_connection(connector=connector)
    blocked = connector_test_connection(connector=refused)

    assert isinstance(result, ConnectionWorks) and result.detail.startswith("connected: MariaDB ")
    assert "warning: the account can change data" in result.detail  # root
    assert isinstance(blocked, ConnectionFailed) and blocked.reason.startswith("blocked by the SSRF guard")
