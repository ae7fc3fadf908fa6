"""Record first, or do not run (issue #14, High): a connector call gets its call-log row before it is made;
a row that cannot be written stops the call; no value in the arguments can keep the row from being written.

Run on both backends: ``DATABASE_URL=postgres://... pytest tests/hooks/test_audit_record_first.py``.
"""

from __future__ import annotations

import asyncio
import math

import pytest
from channels.db import database_sync_to_async
from django.db import connection

from agents.engine.run_context import RunContext
from connectors.models import ConnectorCallLog
from connectors.services import call_log_record
from hooks.audit import NOT_FINISHED
from tests.fakes.openai_server import call, text, tool_calls
from tests.hooks.harness import cancelled_after, run_agent
from tests.hooks.scenario import add_query_action, build_purchasing, hold_large_payments

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("connector_tools")]

# Raw tool-call argument strings a hostile model sends for a payment under "amount > 50000".
HOSTILE_PAYMENTS = [
    '{"order_id": "SO-1002", "amount": NaN, "currency": "CNY"}',
    '{"order_id": "SO-1002", "amount": Infinity, "currency": "CNY"}',
    '{"order_id": "SO-1002", "amount": -Infinity, "currency": "CNY"}',
    '{"order_id": "SO-1002", "amount": 1e999, "currency": "CNY"}',
    '{"order_id": "SO-1002", "amount": 1, "currency": "CNY", "amount": 90000}',
    '{"order_id": "SO-1002", "amount": 90000, "currency": "CNY"} {"amount": 1}',
]


@pytest.fixture
async def world(scripted_llm, http_service):
    def build():
        world = build_purchasing(llm_base_url=scripted_llm.base_url, erp_base_url=http_service.base_url)
        hold_large_payments(world, approver_open_ids=[])
        add_query_action(world.erp, "slow", "/sleep", param="seconds", json_type="number")
        return world

    return await database_sync_to_async(build)()


def tool_messages(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


@pytest.mark.parametrize("raw", HOSTILE_PAYMENTS)
async def test_a_payment_with_non_strict_arguments_is_not_made_and_is_recorded(
    world, scripted_llm, make_llm, http_service, raw
):
    scripted_llm.script(tool_calls(call("erp__create_payment", raw, id="pay")), text("I could not pay."))
    result = await run_agent(world, make_llm, "Pay order SO-1002")
    assert http_service.requests_to("/payments") == []
    [record] = result.tool_calls
    assert record.outcome == "invalid_args" and "not valid JSON" in record.observation
    assert "not valid JSON" in tool_messages(scripted_llm.last_request)[0]
    row = await ConnectorCallLog.objects.unscoped().aget(tool_call_id="pay")
    assert row.status == "error" and "not valid JSON" in row.error and row.is_write


UNSTORABLE_ARGUMENTS = [
    {"note": "a\x00b"},
    {"amount": math.nan},
    {"amount": -math.inf, "memo": "\ud800"},
    {"blob": b"\x00\xff", "tags": {"x", "y"}},
    {"nested": {"deeper": [{"nul\x00key": 1}]}},
]


@pytest.mark.parametrize("arguments", UNSTORABLE_ARGUMENTS)
def test_a_call_log_row_is_written_whatever_the_arguments_hold(org, arguments):
    row = call_log_record(
        context=RunContext(org_id=org.pk, run_id="r-1"),
        tool_name="erp__create_payment",
        arguments=arguments,
        status="error",
        error="the service said: \x00 \ud800",
    )
    row.refresh_from_db()
    assert row.arguments and "\x00" not in str(row.arguments) and "\\u0000" in row.error


async def test_a_call_with_a_nul_in_its_arguments_runs_and_leaves_its_row(
    world, scripted_llm, make_llm, http_service
):
    scripted_llm.script(
        tool_calls(call("erp__list_payments", '{"note": "a\\u0000b"}', id="nul")), text("Listed.")
    )
    result = await run_agent(world, make_llm, "List payments")
    assert result.tool_calls[0].outcome == "ok"
    row = await ConnectorCallLog.objects.unscoped().aget(tool_call_id="nul")
    assert row.status == "ok" and row.arguments == {"note": "a\\u0000b"}


@pytest.fixture
def refused_call_logs():
    """The database refuses every new call-log row (a real trigger, on either backend)."""
    table = ConnectorCallLog._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "CREATE OR REPLACE FUNCTION refuse_call_log() RETURNS trigger AS $$ "
                "BEGIN RAISE EXCEPTION 'call logs are refused'; END $$ LANGUAGE plpgsql"
            )
            cursor.execute(
                f"CREATE TRIGGER refuse_call_log BEFORE INSERT ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION refuse_call_log()"
            )
        else:
            cursor.execute(
                f"CREATE TRIGGER refuse_call_log BEFORE INSERT ON {table} "
                "BEGIN SELECT RAISE(ABORT, 'call logs are refused'); END"
            )
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(
                f"DROP TRIGGER IF EXISTS refuse_call_log{' ON ' + table if connection.vendor == 'postgresql' else ''}"
            )
            if connection.vendor == "postgresql":
                cursor.execute("DROP FUNCTION IF EXISTS refuse_call_log()")


async def test_a_call_that_cannot_be_recorded_is_not_made(
    world, scripted_llm, make_llm, http_service, refused_call_logs
):
    scripted_llm.script(tool_calls(call("erp__list_payments", {}, id="unrecorded")), text("Sorry."))
    result = await run_agent(world, make_llm, "List payments")
    assert http_service.requests_to("/payments") == []
    [record] = result.tool_calls
    assert record.outcome == "blocked"
    assert "could not be recorded in the audit log" in tool_messages(scripted_llm.last_request)[0]


async def test_a_run_stopped_while_its_call_runs_keeps_the_row_written_before_it(
    world, scripted_llm, make_llm, http_service
):
    scripted_llm.script(tool_calls(call("erp__slow", {"seconds": 5}, id="slow")))
    run = asyncio.create_task(run_agent(world, make_llm, "Slow report"))
    async with cancelled_after(run):
        async with asyncio.timeout(10):
            while not http_service.requests_to("/sleep"):  # noqa: ASYNC110 - the service is a thread
                await asyncio.sleep(0.02)
        row = await ConnectorCallLog.objects.unscoped().aget(tool_call_id="slow")
        assert row.status == "error" and row.error == NOT_FINISHED  # written before the call went out
    [row] = [r async for r in ConnectorCallLog.objects.unscoped().all()]
    assert row.tool_call_id == "slow" and row.error == NOT_FINISHED


async def test_a_finished_call_completes_its_row_instead_of_adding_one(
    world, scripted_llm, make_llm, http_service
):
    scripted_llm.script(tool_calls(call("erp__list_payments", {}, id="ok")), text("Listed."))
    await run_agent(world, make_llm, "List payments")
    [row] = [r async for r in ConnectorCallLog.objects.unscoped().all()]
    assert row.status == "ok" and row.error == "" and row.http_status == 200 and row.latency_ms > 0
