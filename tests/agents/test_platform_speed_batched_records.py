"""The tool ledger's and the call log's rows ride the run's event batches (issue #22) and the rule still
holds: an attempted connector call is recorded before it runs, and if it cannot be recorded it does not
run. Run on both backends: ``DATABASE_URL=postgres://... pytest tests/agents/test_platform_speed_*``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from channels.db import database_sync_to_async

from agents.engine.hooks import OUTCOME_OK, HookContext
from agents.engine.run_context import RunContext
from agents.engine.tool_context import ToolCallContext
from agents.engine.tools import ToolResult
from agents.engine.verdicts import Allow, Block
from agents.models import Run, RunEvent, ToolCallEntry, ToolCallStatus
from agents.runs.checkpoints import DatabaseToolLedger
from agents.runs.events import store as events_store
from agents.runs.events.store import EventSink, Fence, LeaseLost
from connectors.models import ConnectorCallLog
from hooks import audit as audit_module
from hooks.audit import NOT_FINISHED, AuditHook
from hooks.catalog import ActionCatalog, ActionInfo
from hooks.state import RunGuardState
from tests.agents.factories import RunFactory
from tests.factories import ConnectorActionFactory

pytestmark = pytest.mark.django_db(transaction=True)


@dataclass(frozen=True)
class _Gives:
    """A run write that returns ``value``, or raises ``error``."""

    value: Any = None
    error: Exception | None = None

    def apply(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


async def _world() -> tuple[Any, EventSink, AuditHook]:
    def build() -> tuple[Any, Any]:
        run = RunFactory(status="running", lease_owner="here#1")
        action = ConnectorActionFactory(connector__organization=run.organization, name="pay", is_write=True)
        return run, action

    run, action = await database_sync_to_async(build)()
    sink = EventSink(
        conversation_id=run.conversation_id, run_id=run.pk, first_seq=1, fence=Fence("here#1", 15)
    )
    context = RunContext(
        org_id=run.organization_id,
        user_id=run.user_id,
        conversation_id=str(run.conversation_id),
        run_id=str(run.pk),
    )
    info = await database_sync_to_async(ActionInfo.from_action)(action)
    hook = AuditHook(context=context, catalog=ActionCatalog([info]), state=RunGuardState(), writes=sink)
    return run, sink, hook


def _call(hook: AuditHook, call_id: str = "c1") -> HookContext:
    [info] = list(hook.catalog)
    return HookContext(ToolCallContext(info.tool_name, call_id, 1, hook.context), {"amount": 5})


async def _rows(**filters: Any) -> list[ConnectorCallLog]:
    return await database_sync_to_async(lambda: list(ConnectorCallLog.objects.unscoped().filter(**filters)))()


async def test_the_row_before_a_call_is_committed_with_the_events_queued_before_it_when_the_hook_returns():
    run, sink, hook = await _world()
    sink.emit("step", {"type": "iteration", "status": "start"})
    ctx = _call(hook)
    assert isinstance(await hook.recorder.pre_tool_use(ctx), Allow)
    # Nothing was awaited but the batch: the row and the event before it are both on disk now.
    [row] = await _rows(tool_call_id="c1")
    assert row.status == "error" and row.error == NOT_FINISHED
    assert await RunEvent.objects.filter(run_id=run.pk).acount() == 1
    await sink.close()


async def test_a_call_whose_row_the_database_refuses_is_blocked_and_the_batch_keeps_its_events(monkeypatch):
    run, sink, hook = await _world()

    def refused(self: Any) -> int:
        raise RuntimeError("the database refused the row")

    monkeypatch.setattr(audit_module.CallLogStart, "apply", refused)
    sink.emit("step", {"type": "iteration", "status": "start"})
    verdict = await hook.recorder.pre_tool_use(_call(hook))
    assert isinstance(verdict, Block)
    assert "could not be recorded" in verdict.reason
    assert await _rows() == []
    await sink.close()
    assert await RunEvent.objects.filter(run_id=run.pk).acount() == 1  # the refused write cost nothing else


async def test_a_run_that_lost_its_lease_records_no_call_and_the_call_is_blocked():
    run, sink, hook = await _world()
    await Run.objects.unscoped().filter(pk=run.pk).aupdate(lease_owner="elsewhere#2")
    verdict = await hook.recorder.pre_tool_use(_call(hook))
    assert isinstance(verdict, Block)
    assert sink.lease_lost and await _rows() == []
    with pytest.raises(LeaseLost):  # and nothing more is even queued
        await sink.write_durable(_Gives())


async def test_the_update_after_a_call_rides_the_runs_next_batch_instead_of_a_database_hop(monkeypatch):
    run, sink, hook = await _world()
    ctx = _call(hook)
    await hook.recorder.pre_tool_use(ctx)
    queued: list[Any] = []
    put = events_store._Writer.put

    def counting(self: Any, owner: EventSink, item: Any) -> Any:
        queued.append(item)
        return put(self, owner, item)

    def no_hop(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("the call log took a database hop of its own")

    monkeypatch.setattr(events_store._Writer, "put", counting)
    monkeypatch.setattr(audit_module, "sync_to_async", no_hop)
    done = HookContext(ctx.call, ctx.tool_args, outcome=OUTCOME_OK)
    await hook.post_tool_use(done, ToolResult(content="paid"))
    assert len(queued) == 1 and isinstance(queued[0], audit_module.CallLogEnd)
    await sink.close()
    [row] = await _rows(tool_call_id="c1")
    assert row.status == "ok" and row.error == ""


async def test_the_ledgers_begin_is_on_disk_when_it_returns_and_its_finish_rides_the_next_batch():
    run, sink, _hook = await _world()
    ledger = DatabaseToolLedger(sink)
    key = f"{run.pk}:c9"
    await ledger.begin(key, tool_name="erp__pay", args={}, iteration=1)
    entry = await ToolCallEntry.objects.aget(run_id=run.pk, tool_call_id="c9")
    assert entry.status == ToolCallStatus.STARTED
    await ledger.finish(key, observation="paid", error=None, outcome="ok")
    await sink.close()
    entry = await ToolCallEntry.objects.aget(run_id=run.pk, tool_call_id="c9")
    assert entry.status == ToolCallStatus.FINISHED and entry.observation == "paid"


async def test_a_durable_write_refused_when_batched_with_another_run_costs_neither_run_its_events():
    first, sink_a, _ = await _world()
    second, sink_b, _ = await _world()
    sink_a.emit("step", {"n": 1})
    sink_b.emit("step", {"n": 2})

    failing = sink_a.write_durable(_Gives(error=RuntimeError("refused")))
    working = sink_b.write_durable(_Gives(42))
    assert await working == 42
    with pytest.raises(RuntimeError):
        await failing
    await sink_a.close()
    await sink_b.close()
    assert await RunEvent.objects.filter(run_id__in=[first.pk, second.pk]).acount() == 2


async def test_a_call_of_a_connector_deleted_mid_run_is_recorded_without_its_links_and_costs_the_batch_nothing():
    run, sink, hook = await _world()
    [info] = list(hook.catalog)
    from connectors.models import Connector

    await Connector.objects.unscoped().filter(pk=info.connector_id).adelete()
    sink.emit("step", {"type": "iteration", "status": "start"})
    assert isinstance(await hook.recorder.pre_tool_use(_call(hook)), Allow)
    [row] = await _rows(tool_call_id="c1")
    assert row.connector_id is None and row.action_id is None and row.error == NOT_FINISHED
    await sink.close()
    assert sink.failed is None
    assert await RunEvent.objects.filter(run_id=run.pk).acount() == 1


async def test_a_call_id_the_model_reuses_in_a_later_turn_begins_a_new_call_in_the_ledger():
    run, sink, _hook = await _world()
    ledger = DatabaseToolLedger(sink)
    key = f"{run.pk}:same"
    await ledger.begin(key, tool_name="erp__pay", args={}, iteration=1)
    await ledger.finish(key, observation="paid", error=None, outcome="ok")
    await ledger.begin(key, tool_name="erp__refund", args={}, iteration=3)
    [entry] = await database_sync_to_async(lambda: list(ToolCallEntry.objects.filter(run_id=run.pk)))()
    assert (entry.status, entry.iteration, entry.tool_name, entry.observation) == (
        ToolCallStatus.STARTED,
        3,
        "erp__refund",
        "",
    )
    await sink.close()
