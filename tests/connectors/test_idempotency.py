"""The idempotency key of a run's connector calls: derived from the run and the tool call, sent by the
real connector tools (run by the engine's tool runner) to a loopback service and to the demo ERP."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from agents.engine import events
from agents.engine.durable.ledger import RecordedCall
from agents.engine.parsing import ToolCall
from agents.engine.run_context import RunContext
from agents.engine.tool_context import ToolCallContext
from agents.engine.tool_runner import ToolRunner
from agents.engine.tools import Tool, ToolCallRecord, ToolRegistry
from connectors.demo.api.models import DemoPayment, DemoPurchaseOrder
from connectors.idempotency import connector_idempotency_key
from connectors.services import connector_test_connection
from connectors.tools import aconnector_tools_for, connector_tools_for_run
from tests.connectors.demo_erp import demo_erp_connector, demo_erp_document
from tests.factories import ConnectorActionFactory, ConnectorFactory
from tests.fakes.http_service import LoopbackHTTPService, running_http_service

PAY_PARAMETERS = {"type": "object", "properties": {"amount": {"type": "number"}}}


@pytest.fixture
def http_service():
    with running_http_service() as service:
        yield service


class _Ledger:
    """The engine's tool call ledger in memory, knowing only the calls of this attempt (so a replayed
    call runs again, as it would if a call reached the API while the platform had no record of it)."""

    def __init__(self) -> None:
        self.keys: list[str] = []

    async def recorded(self, keys: Sequence[str], *, iteration: int) -> Mapping[str, RecordedCall]:
        return {}

    async def begin(self, key: str, *, tool_name: str, args: Mapping[str, Any], iteration: int) -> None:
        self.keys.append(key)

    async def finish(self, key: str, *, observation: str, error: str | None, outcome: str) -> None:
        return None


def _blueprint(org, connector, run_id: str) -> SimpleNamespace:
    """What ``agents.runtime.runtime_build`` gives the tool factories of a run."""
    return SimpleNamespace(
        context=RunContext(org_id=org.pk, agent_id="7", conversation_id="c-1", run_id=run_id),
        agent_id=7,
        run_id=run_id,
        connector_ids=[str(connector.pk)],
        run_secrets=(),
        config_version=None,
        extra={},
    )


async def _run_calls(
    blueprint: SimpleNamespace, calls: list[ToolCall], *, replay: bool = False, ledger: _Ledger | None = None
) -> list[ToolCallRecord]:
    """One batch of a run's tool calls, with the run's tools built afresh (as a resumed run does)."""
    tools: list[Tool] = await sync_to_async(connector_tools_for_run)(blueprint)
    runner = ToolRunner(None, tool_timeout=30, batch_timeout=60, max_parallel=1, ledger=ledger or _Ledger())
    return await runner.run(
        calls,
        ToolRegistry(tools),
        iteration=1,
        metadata=blueprint.context,
        emit=events.Emitter(None),
        replay=replay,
    )


def _keys(service: LoopbackHTTPService, path: str) -> list[str | None]:
    return [r.headers.get("idempotency-key") for r in service.requests_to(path)]


# --- the key --------------------------------------------------------------------------------------------


def test_the_key_is_the_run_and_call_ids_and_a_digest_of_the_arguments():
    run_id = "0b9f6c1e-6f3a-4f57-9d1a-2a8c5d7e9f10"
    key = connector_idempotency_key(run_id=run_id, tool_call_id="call_Ab3", arguments={"a": 1, "b": [2]})

    assert key.startswith(f"{run_id}:call_Ab3:") and len(key.rsplit(":", 1)[1]) == 16
    assert key == connector_idempotency_key(
        run_id=run_id, tool_call_id="call_Ab3", arguments={"b": [2], "a": 1}
    )
    others = {
        connector_idempotency_key(run_id=run_id, tool_call_id="call_Ab4", arguments={"a": 1, "b": [2]}),
        connector_idempotency_key(run_id=run_id, tool_call_id="call_Ab3", arguments={"a": 2, "b": [2]}),
        connector_idempotency_key(
            run_id=str(uuid.uuid4()), tool_call_id="call_Ab3", arguments={"a": 1, "b": [2]}
        ),
    }
    assert key not in others and len(others) == 3


@pytest.mark.parametrize("tool_call_id", ["调用-1", "call 1\r\nX-Injected: 1", "c" * 101, "a/b"])
def test_a_call_id_that_is_not_plain_ascii_becomes_a_digest(tool_call_id):
    key = connector_idempotency_key(run_id="r-1", tool_call_id=tool_call_id, arguments={})

    assert key.isascii() and key.isprintable() and " " not in key and len(key) <= 255
    run_part, call_part, _digest = key.split(":")
    assert run_part == "r-1" and call_part.startswith("h") and len(call_part) == 33
    assert key == connector_idempotency_key(run_id="r-1", tool_call_id=tool_call_id, arguments={})


# --- sent by a run's connector tools ------------------------------------------------------------------------


def _crm_connector(org, base_url: str, *, listing: bool = False):
    """A ``crm`` connector on the loopback service with a ``pay`` write action (and ``list_payments``)."""
    connector = ConnectorFactory(
        organization=org, name="crm", base_url=base_url, allowed_private_hosts=["127.0.0.1"]
    )
    ConnectorActionFactory(
        connector=connector, name="pay", method="POST", path_template="/payments", parameters=PAY_PARAMETERS
    )
    if listing:
        ConnectorActionFactory(
            connector=connector, name="list_payments", method="GET", path_template="/payments"
        )
    return connector


@pytest.mark.django_db(transaction=True)
async def test_a_runs_write_calls_carry_a_key_per_call_that_a_resumed_run_sends_again(http_service, org):
    connector = await sync_to_async(_crm_connector)(org, http_service.base_url, listing=True)
    run_id = str(uuid.uuid4())
    blueprint = _blueprint(org, connector, run_id)

    # given a run that paid twice (two tool calls with the same arguments) and listed the payments
    ledger = _Ledger()
    records = await _run_calls(
        blueprint,
        [
            ToolCall("pay-1", "crm__pay", {"amount": 5}),
            ToolCall("pay-2", "crm__pay", {"amount": 5}),
            ToolCall("list-1", "crm__list_payments", {}),
        ],
        ledger=ledger,
    )
    assert [r.outcome for r in records] == ["ok", "ok", "ok"]
    first, second, listing = _keys(http_service, "/payments")

    # then each write call sent its own key, derived from the key the ledger records it under
    assert first == connector_idempotency_key(run_id=run_id, tool_call_id="pay-1", arguments={"amount": 5})
    assert first.startswith(ledger.keys[0] + ":") and ledger.keys[0] == f"{run_id}:pay-1"
    assert second is not None and second != first
    assert listing is None

    # when the run resumes in another process and its pay-1 call reaches the service again
    await _run_calls(blueprint, [ToolCall("pay-1", "crm__pay", {"amount": 5})], replay=True)
    # and, later, the model reuses the id pay-1 for another payment
    await _run_calls(blueprint, [ToolCall("pay-1", "crm__pay", {"amount": 7})])

    # then the replay carried the same key, and the other payment a key of its own
    replayed, reused = _keys(http_service, "/payments")[3:]
    assert replayed == first
    assert reused not in (first, second, None)


@pytest.mark.django_db(transaction=True)
async def test_calls_outside_a_run_and_test_connection_send_no_key(http_service, org):
    connector = await sync_to_async(_crm_connector)(org, http_service.base_url)
    assert connector.idempotency_header == "Idempotency-Key"
    [tool] = await aconnector_tools_for(
        organization_id=org.pk, connector_ids=[connector.pk], context=RunContext(org_id=org.pk)
    )
    result = await tool.execute(ToolCallContext(tool.name, ""), amount=5)
    tested = await sync_to_async(connector_test_connection)(connector=connector)

    assert not result.is_error and tested.type == "works"
    assert [r.method for r in http_service.requests] == ["POST", "GET"]
    assert all("idempotency-key" not in r.headers for r in http_service.requests)


@pytest.mark.django_db(transaction=True)
async def test_the_connectors_header_setting_renames_or_turns_off_the_key(http_service, org):
    def arrange(name, header):
        connector = ConnectorFactory(
            organization=org,
            name=name,
            base_url=http_service.base_url + f"/{name}",
            allowed_private_hosts=["127.0.0.1"],
            idempotency_header=header,
        )
        ConnectorActionFactory(connector=connector, name="pay", method="POST", path_template="/payments")
        return connector

    renamed = await sync_to_async(arrange)("renamed", "X-Request-Id")
    off = await sync_to_async(arrange)("off", "")
    await _run_calls(_blueprint(org, renamed, "run-1"), [ToolCall("c1", "renamed__pay", {})])
    await _run_calls(_blueprint(org, off, "run-1"), [ToolCall("c1", "off__pay", {})])

    [sent] = http_service.requests_to("/renamed/payments")
    assert sent.headers["x-request-id"] == connector_idempotency_key(
        run_id="run-1", tool_call_id="c1", arguments={}
    )
    assert "idempotency-key" not in sent.headers
    [unkeyed] = http_service.requests_to("/off/payments")
    assert not {"idempotency-key", "x-request-id"} & set(unkeyed.headers)


# --- the demo ERP, over HTTP ------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_the_demo_erp_pays_once_for_a_call_that_reaches_it_twice(live_server, org):
    document = await demo_erp_document(live_server.url)

    def arrange():
        connector, _ = demo_erp_connector(org, live_server.url, document)
        order = DemoPurchaseOrder.objects.create(
            number="PO-IDEM", supplier="Acme Parts", amount=Decimal("100.00"), status="approved"
        )
        return connector, order

    connector, order = await sync_to_async(arrange)()
    blueprint = _blueprint(org, connector, str(uuid.uuid4()))
    args = {"order_id": order.pk, "amount": "40.00", "method": "card"}

    # given a run that paid 40 of the order
    [paid] = await _run_calls(blueprint, [ToolCall("pay-1", "erp__create_payment", args)])
    assert paid.outcome == "ok", paid.observation
    payment = json.loads(paid.observation)

    # when its call reaches the ERP again after the run resumed
    [again] = await _run_calls(blueprint, [ToolCall("pay-1", "erp__create_payment", args)], replay=True)

    # then the ERP answered with the first payment and did not pay again
    assert again.outcome == "ok" and json.loads(again.observation) == payment
    assert await DemoPayment.objects.filter(order=order).acount() == 1

    # and another tool call with the same arguments is another payment
    [other] = await _run_calls(blueprint, [ToolCall("pay-2", "erp__create_payment", args)])
    assert other.outcome == "ok" and json.loads(other.observation)["id"] != payment["id"]
    amounts = [p.amount async for p in DemoPayment.objects.filter(order=order)]
    assert amounts == [Decimal("40.00"), Decimal("40.00")]
