"""Connector actions as engine tools, called against real loopback servers; one call-log row per call."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from urllib.parse import quote

import pytest
from asgiref.sync import sync_to_async
from django.db import connection

from agents import runtime
from agents.engine.run_context import RunContext
from agents.engine.tool_context import ToolCallContext
from agents.engine.tools import ToolRegistry
from connectors.models import Connector, ConnectorAction, ConnectorCallLog
from connectors.redaction import is_secret_key, redact
from connectors.tools import (
    FREE_FORM_PARAMETERS,
    aconnector_tools_for,
    connector_tools_for,
    connector_tools_for_run,
    tool_name_for,
)
from tests.connectors.demo_erp import demo_erp_connector, demo_erp_document
from tests.factories import ConnectorActionFactory, ConnectorFactory
from tests.fakes.http_service import running_http_service

TOKEN = "tok-live-7d3c9a1b"


@pytest.fixture
def http_service():
    with running_http_service() as service:
        yield service


def _context(org, user=None) -> RunContext:
    return RunContext(
        org_id=org.pk,
        user_id=user.pk if user is not None else None,
        agent_id="agent-7",
        conversation_id="conv-1",
        run_id="run-1",
    )


# A call made outside the tool runner (no tool call id, so no idempotency key either).
DIRECT = ToolCallContext("direct", "")


def _logs():
    return list(ConnectorCallLog.objects.unscoped().order_by("id"))


async def _tools(org, *connectors, user=None):
    tools = await aconnector_tools_for(
        organization_id=org.pk, connector_ids=[c.pk for c in connectors], context=_context(org, user)
    )
    return {t.name: t for t in tools}


# --- the demo API, imported from its OpenAPI document, every action called through its tool ----------


@pytest.mark.django_db(transaction=True)
async def test_every_imported_demo_action_works_through_its_tool_and_leaves_one_log_row(
    live_server, org, member
):
    document = await demo_erp_document(live_server.url)
    connector, report = await sync_to_async(demo_erp_connector)(org, live_server.url, document)
    assert len(report.added) == 6
    tools = await _tools(org, connector, user=member)
    registry = ToolRegistry(tools.values())  # the engine accepts every schema
    assert sorted(registry.names()) == sorted(f"erp__{name}" for name in report.added)

    async def call(name, **args):
        problems = registry.validate(name, args)
        assert problems == [], problems
        result = await tools[name].execute(ToolCallContext(name, f"call-{name}"), **args)
        assert not result.is_error, result.error
        return json.loads(result.content)

    order = await call(
        "erp__create_purchase_order", supplier="Acme Parts", amount="250.00", description="Bolts"
    )
    assert order["status"] == "draft" and order["number"].startswith("PO-")
    drafts = await call("erp__list_purchase_orders", status="draft")
    assert [o["id"] for o in drafts] == [order["id"]]
    approved = await call("erp__approve_purchase_order", order_id=order["id"], approver="li.wei")
    assert approved["status"] == "approved" and approved["approved_by"] == "li.wei"
    payment = await call("erp__create_payment", order_id=order["id"], amount="250.00", method="card")
    assert payment["order_number"] == order["number"]
    assert [p["id"] for p in await call("erp__list_payments", order_id=order["id"])] == [payment["id"]]
    assert (await call("erp__get_purchase_order", order_id=order["id"]))["status"] == "paid"

    logs = await sync_to_async(_logs)()
    assert [log.tool_name for log in logs] == [
        "erp__create_purchase_order",
        "erp__list_purchase_orders",
        "erp__approve_purchase_order",
        "erp__create_payment",
        "erp__list_payments",
        "erp__get_purchase_order",
    ]
    assert [log.http_status for log in logs] == [201, 200, 200, 201, 200, 200]
    assert [log.is_write for log in logs] == [True, False, True, True, False, False]
    first = logs[0]
    assert first.status == "ok" and first.organization_id == org.pk and first.user_id == member.pk
    assert (first.agent_id, first.conversation_id, first.run_id) == ("agent-7", "conv-1", "run-1")
    assert first.tool_call_id == "call-erp__create_purchase_order"
    assert first.arguments == {"supplier": "Acme Parts", "amount": "250.00", "description": "Bolts"}
    assert first.connector_id == connector.pk and first.action_id is not None
    assert first.request_bytes > 0 and first.response_bytes > 0 and first.latency_ms > 0


# --- the loopback echo service: authentication, redaction, failures --------------------------------


def _echo_connector(org, service, **fields):
    values = {"name": "crm", "allowed_private_hosts": ["127.0.0.1"], **fields}
    connector = ConnectorFactory(organization=org, base_url=service.base_url, auth_type="bearer", **values)
    connector.auth_secret = TOKEN
    connector.save()
    return connector


def _slow_action(connector):
    """``slow``: a GET of the service's ``/sleep``, which answers after ``seconds``."""
    return ConnectorActionFactory(
        connector=connector,
        name="slow",
        path_template="/sleep",
        parameters={"type": "object", "properties": {"seconds": {"type": "number"}}},
    )


@pytest.mark.django_db(transaction=True)
async def test_arguments_and_results_are_redacted_in_the_call_log_and_for_the_model(http_service, org):
    def arrange():
        connector = _echo_connector(org, http_service)
        ConnectorActionFactory(
            connector=connector,
            name="add_note",
            method="POST",
            path_template="/notes",
            parameters={
                "type": "object",
                "properties": {"note": {"type": "string"}, "password": {"type": "string"}},
            },
        )
        return connector

    connector = await sync_to_async(arrange)()
    tool = (await _tools(org, connector))["crm__add_note"]
    result = await tool.execute(DIRECT, note=f"the token is {TOKEN}", password="hunter2-pw")

    assert not result.is_error
    sent = http_service.requests_to("/notes")[0]
    assert sent.headers["authorization"] == f"Bearer {TOKEN}"  # the credential reached the service
    assert sent.json() == {"note": f"the token is {TOKEN}", "password": "hunter2-pw"}
    assert TOKEN not in result.content and "hunter2-pw" in result.content  # echoed body, token scrubbed
    [log] = await sync_to_async(_logs)()
    assert log.arguments == {"note": "the token is [redacted]", "password": "[redacted]"}
    assert TOKEN not in json.dumps(log.arguments) + log.error


@pytest.mark.django_db(transaction=True)
async def test_an_http_error_is_one_error_row_and_an_error_observation(http_service, org):
    def arrange():
        connector = _echo_connector(org, http_service)
        ConnectorActionFactory(connector=connector, name="broken", method="POST", path_template="/status/500")
        return connector

    connector = await sync_to_async(arrange)()
    result = await (await _tools(org, connector))["crm__broken"].execute(DIRECT)
    assert result.is_error and "HTTP 500" in result.error
    [log] = await sync_to_async(_logs)()
    assert log.status == "error" and log.http_status == 500 and "HTTP 500" in log.error


@pytest.mark.django_db(transaction=True)
async def test_a_loopback_target_without_an_allowance_is_refused_and_logged(http_service, org):
    def arrange():
        connector = _echo_connector(org, http_service, allowed_private_hosts=[])
        ConnectorActionFactory(connector=connector, name="list_items")
        return connector

    connector = await sync_to_async(arrange)()
    result = await (await _tools(org, connector))["crm__list_items"].execute(DIRECT)
    assert result.is_error
    assert http_service.connections == 0
    [log] = await sync_to_async(_logs)()
    assert log.status == "error" and log.error


@pytest.mark.django_db(transaction=True)
async def test_a_connector_deactivated_after_the_tools_were_built_is_not_called(http_service, org):
    def arrange():
        connector = _echo_connector(org, http_service)
        ConnectorActionFactory(connector=connector, name="list_items")
        return connector

    connector = await sync_to_async(arrange)()
    tool = (await _tools(org, connector))["crm__list_items"]
    await sync_to_async(Connector.objects.unscoped().filter(pk=connector.pk).update)(is_active=False)
    result = await tool.execute(DIRECT)
    assert result.is_error and "deactivated" in result.error
    assert http_service.requests == []
    [log] = await sync_to_async(_logs)()
    assert log.status == "error" and log.connector_id is None and log.tool_name == "crm__list_items"


@pytest.mark.django_db(transaction=True)
async def test_a_cancelled_call_still_leaves_exactly_one_row(http_service, org):
    def arrange():
        connector = _echo_connector(org, http_service)
        _slow_action(connector)
        return connector

    connector = await sync_to_async(arrange)()
    tool = (await _tools(org, connector))["crm__slow"]
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(tool.execute(DIRECT, seconds=30), timeout=0.5)
    [log] = await sync_to_async(_logs)()
    assert log.status == "error" and "cancelled" in log.error and log.arguments == {"seconds": 30}


@pytest.mark.django_db(transaction=True)
async def test_a_database_dsn_password_never_reaches_the_model_or_the_log(org):
    dsn = "postgresql://reporter:pw-db-5e6f7a@10.20.30.40:5432/erp"

    def arrange():
        connector = ConnectorFactory(organization=org, name="warehouse", kind="database", base_url="")
        connector.dsn = dsn
        connector.save()
        ConnectorActionFactory(
            connector=connector, name="query", method="", path_template="", free_form=True, parameters={}
        )
        return connector

    connector = await sync_to_async(arrange)()
    tool = (await _tools(org, connector))["warehouse__query"]
    assert tool.parameters == FREE_FORM_PARAMETERS and tool.is_write is False
    result = await tool.execute(DIRECT, sql=f"SELECT '{dsn}'")
    assert result.is_error  # 10.20.30.40 is private and not allowed
    [log] = await sync_to_async(_logs)()
    assert "pw-db-5e6f7a" not in result.observation + log.error + json.dumps(log.arguments)


@pytest.mark.django_db(transaction=True)
async def test_credentials_that_no_longer_decrypt_fail_the_call_not_the_run(http_service, org):
    def arrange():
        connector = _echo_connector(org, http_service)
        ConnectorActionFactory(connector=connector, name="list_items")
        other = _echo_connector(org, http_service, name="other")
        # a ciphertext copied from another row does not decrypt here
        token = (
            Connector.objects.unscoped().filter(pk=other.pk).values_list("auth_secret", flat=True).get().token
        )
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE connectors_connector SET auth_secret = %s WHERE id = %s", [token, connector.pk.hex]
            )
        return connector

    connector = await sync_to_async(arrange)()
    result = await (await _tools(org, connector))["crm__list_items"].execute(DIRECT)
    assert result.is_error and "cannot be decrypted" in result.error
    assert http_service.requests == []
    assert len(await sync_to_async(_logs)()) == 1


# --- building tools ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_only_active_actions_of_active_connectors_of_the_organisation_become_tools(org, other_org):
    connector = ConnectorFactory(organization=org, name="erp", description="The ERP.")
    ConnectorActionFactory(connector=connector, name="list_orders", description="List orders.\nNewest first.")
    ConnectorActionFactory(connector=connector, name="old", is_active=False)
    ConnectorActionFactory(connector=connector, name="pay", method="POST", path_template="/pay")
    inactive = ConnectorFactory(organization=org, is_active=False)
    ConnectorActionFactory(connector=inactive)
    foreign = ConnectorActionFactory(connector__organization=other_org)

    tools = connector_tools_for(
        organization_id=org.pk,
        connector_ids=[connector.pk, inactive.pk, foreign.connector_id],
        context=_context(org),
    )
    assert [t.name for t in tools] == ["erp__list_orders", "erp__pay"]
    assert tools[0].description == (
        "List orders. (erp: GET /items)\nNewest first.\nSystem: The ERP.\nRead-only: it does not change data."
    )
    assert tools[1].description.endswith("This action CHANGES data in the system.")
    with pytest.raises(ValueError, match="another organisation"):
        connector_tools_for(organization_id=org.pk, connector_ids=[connector.pk], context=_context(other_org))


@pytest.mark.django_db
def test_build_and_schema_queries_do_not_grow_with_actions(org, django_assert_num_queries):
    connector = ConnectorFactory(organization=org)
    for _ in range(8):
        ConnectorActionFactory(connector=connector)
    with django_assert_num_queries(1):
        tools = connector_tools_for(
            organization_id=org.pk, connector_ids=[connector.pk], context=_context(org)
        )
    assert len(tools) == 8


def test_tool_names_always_match_the_engine_pattern():
    assert tool_name_for("erp", "list_orders") == "erp__list_orders"
    long = tool_name_for("c" * 40, "a" * 64)
    assert len(long) == 64 and long.startswith("c" * 40 + "__")
    assert long != tool_name_for("c" * 40, "a" * 63 + "b")


@pytest.mark.django_db
def test_admin_deactivated_and_removed_actions_are_skipped(org):
    connector = ConnectorFactory(organization=org)
    action = ConnectorActionFactory(connector=connector)
    ConnectorAction.objects.unscoped().filter(pk=action.pk).update(is_active=False)
    assert (
        connector_tools_for(organization_id=org.pk, connector_ids=[connector.pk], context=_context(org)) == []
    )


# --- redaction of call-log arguments ------------------------------------------------------------------


def test_secret_looking_keys_and_known_secret_values_are_redacted_everywhere():
    args = {
        "password": "pw",
        "X-Api-Key": "k",
        "Authorization": "Bearer abc",
        "client_secret": "s",
        "author": "Lu Xun",
        "filters": [
            {"note": f"token={TOKEN}"},
            {"url": f"https://x.example.com/?k={quote(TOKEN + '/=', safe='')}"},
        ],
        "amount": 12.5,
    }
    assert redact(args, [TOKEN, TOKEN + "/="]) == {
        "password": "[redacted]",
        "X-Api-Key": "[redacted]",
        "Authorization": "[redacted]",
        "client_secret": "[redacted]",
        "author": "Lu Xun",
        "filters": [{"note": "token=[redacted]"}, {"url": "https://x.example.com/?k=[redacted]"}],
        "amount": 12.5,
    }
    assert is_secret_key("session_id") and is_secret_key("dsn") and not is_secret_key("supplier")


# --- the agents runtime's tool factory and the audit hook's share of the call log --------------------


@pytest.mark.django_db
def test_the_runtime_tool_builder_gives_a_run_its_connector_tools(org, member):
    connector = ConnectorFactory(organization=org, name="erp")
    ConnectorActionFactory(connector=connector, name="list_orders")
    run = RunContext(org_id=org.pk, user_id=member.pk, agent_id="7", conversation_id="c-1", run_id="r-1")
    blueprint = SimpleNamespace(
        context=run,
        agent_id=7,
        connector_ids=[str(connector.pk)],
        run_secrets=(),
        config_version=None,
        extra={},
        chat_files=None,  # no long files attached to its conversation
        skills=None,  # no skills allowed to its agent
        memory_tool=None,  # and its memory off
    )
    assert runtime.tools_for(blueprint).names() == ["erp__list_orders"]
    [tool] = connector_tools_for_run(blueprint)
    assert tool.name == "erp__list_orders"
    assert tool.context == RunContext(
        org_id=org.pk, user_id=member.pk, agent_id="7", conversation_id="c-1", run_id="r-1"
    )
    assert tool.call_log_by_hook is True  # the hooks app is installed: its audit hook writes the rows


@pytest.mark.django_db(transaction=True)
async def test_with_the_audit_hook_the_tool_hands_over_its_outcome_and_writes_no_row_itself(
    http_service, org
):
    def arrange():
        connector = _echo_connector(org, http_service)
        ConnectorActionFactory(connector=connector, name="list_items")
        _slow_action(connector)
        return connector

    connector = await sync_to_async(arrange)()
    context = RunContext(org_id=org.pk)
    tools = {
        t.name: t
        for t in await aconnector_tools_for(
            organization_id=org.pk, connector_ids=[connector.pk], context=context, call_log_by_hook=True
        )
    }
    result = await tools["crm__list_items"].execute(DIRECT)
    assert not result.is_error and result.call.http_status == 200 and result.call.latency_ms > 0
    assert result.secrets == (TOKEN,) and TOKEN not in repr(result)
    assert await sync_to_async(_logs)() == []  # the audit hook writes this one

    # A cancelled call too: the audit hook recorded it before it ran (tests/hooks/test_audit_record_first.py).
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(tools["crm__slow"].execute(DIRECT, seconds=30), timeout=0.5)
    assert await sync_to_async(_logs)() == []
