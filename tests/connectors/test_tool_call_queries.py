"""What one HTTP connector call of a run costs the database (issue #22): the queries and the hops to the
database thread its tool and guard rails make, with the platform's tools and hooks run by the engine's
tool runner, and that what is cached per configuration version still obeys the change an admin makes
between two calls."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref import sync as asgiref_sync
from asgiref.sync import async_to_sync, sync_to_async
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.engine import events
from agents.engine.hooks import (
    ALLOW,
    HookContext,
    HookRegistry,
    PostToolUseHook,
    PostVerdict,
    PreToolUseHook,
    PreVerdict,
)
from agents.engine.parsing import ToolCall
from agents.engine.tool_runner import ToolRunner
from agents.engine.tools import ToolCallRecord, ToolRegistry, ToolResult
from connectors.models import ConnectorCallLog
from connectors.services import connector_save
from connectors.tools import connector_tools_for_run
from hooks.audit import RECORD_PRIORITY
from hooks.registry import guard_rail_hooks
from platform_core.models import ConfigVersion
from platform_core.services import organization_set_read_only
from tests.fakes.http_service import running_http_service
from tests.hooks.factories import RateLimitFactory
from tests.hooks.harness import blueprint_for
from tests.hooks.scenario import build_purchasing

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_config_cache")]


@pytest.fixture
def world():
    cache.clear()  # rate-limit counters of earlier tests (whose limit ids a rolled-back database reuses)
    with running_http_service() as service:
        yield build_purchasing(llm_base_url="http://127.0.0.1:9/v1", erp_base_url=service.base_url)


class _Hops:
    """Counts the hops to the database thread (thread-sensitive ``sync_to_async`` calls)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        call = asgiref_sync.SyncToAsync.__call__

        async def counting(this: Any, *args: Any, **kwargs: Any) -> Any:
            if this._thread_sensitive:
                self.count += 1
            return await call(this, *args, **kwargs)

        monkeypatch.setattr(asgiref_sync.SyncToAsync, "__call__", counting)


PAY = {"amount": 5, "currency": "EUR"}


class _Run:
    """One run's tools and guard rails (as the runtime builds them), its calls run by the engine's tool
    runner."""

    def __init__(self, world: Any, *, more_hooks: tuple[Any, ...] = ()) -> None:
        self.blueprint = blueprint_for(world)
        self.tools = ToolRegistry(connector_tools_for_run(self.blueprint))
        self.hooks = HookRegistry([*guard_rail_hooks(self.blueprint).hooks, *more_hooks])

    def call(self, call_id: str, tool: str = "erp__list_payments", args: Any = None) -> ToolCallRecord:
        runner = ToolRunner(self.hooks, tool_timeout=30, batch_timeout=60, max_parallel=1)
        [record] = async_to_sync(runner.run)(
            [ToolCall(call_id, tool, dict(args or {}))],
            self.tools,
            iteration=1,
            metadata=self.blueprint.context,
            emit=events.Emitter(None),
        )
        return record


def _one_call(world: Any, call_id: str, tool: str = "erp__list_payments", args: Any = None) -> ToolCallRecord:
    """One tool call of a new run."""
    return _Run(world).call(call_id, tool, args)


def test_a_warm_http_tool_call_reads_the_organisation_and_nothing_it_already_knows(world, monkeypatch):
    RateLimitFactory(organization=world.org, connector=world.erp, max_calls=100)
    hops = _Hops(monkeypatch)
    _one_call(world, "warm-up")  # fills the process's configuration cache

    run = _Run(world)
    hops_before = hops.count
    with CaptureQueriesContext(connection) as captured:
        record = run.call("c1")
    assert record.outcome == "ok", record.result
    sql = [q["sql"] for q in captured.captured_queries]
    reads = [q for q in sql if q.startswith("SELECT") and not q.startswith('SELECT 1 AS "a"')]
    # The guard rails read the organisation's flag and version (with the connector's secrets to redact,
    # cached for that version); the tool takes the action, its connector's config and decrypted
    # credentials from the process's cache for the version they read. (Was: 3 reads and 5 hops, the
    # connector read once more for its secrets and the action with its connector on every call.)
    assert len(reads) == 1 and 'FROM "platform_core_organization"' in reads[0], reads
    # That hop, and the row before the call and its completion after it (each a hop without a run's
    # batched writes; with them, both ride the run's event batches).
    assert hops.count - hops_before == 3
    assert ConnectorCallLog.objects.unscoped().filter(tool_call_id="c1", status="ok").count() == 1


def test_a_tool_used_without_the_guard_rails_reads_the_configuration_version_itself(world):
    blueprint = blueprint_for(world)
    tools = ToolRegistry(connector_tools_for_run(blueprint))
    runner = ToolRunner(None, tool_timeout=30, batch_timeout=60, max_parallel=1)
    for call_id in ("c1", "c2"):
        with CaptureQueriesContext(connection) as captured:
            [record] = async_to_sync(runner.run)(
                [ToolCall(call_id, "erp__list_payments", {})],
                tools,
                iteration=1,
                metadata=blueprint.context,
                emit=events.Emitter(None),
            )
        assert record.outcome == "ok"
    reads = [q["sql"] for q in captured.captured_queries if q["sql"].startswith("SELECT")]
    assert len(reads) == 1 and 'FROM "platform_core_configversion"' in reads[0], reads


def test_a_connector_deactivated_between_two_calls_of_a_run_stops_the_second(world):
    run = _Run(world)
    assert run.call("c1").outcome == "ok"
    world.erp.is_active = False
    connector_save(connector=world.erp, actor=None)

    record = run.call("c2")
    assert record.outcome == "error" and "deactivated" in (record.result.error or "")
    assert ConnectorCallLog.objects.unscoped().get(tool_call_id="c2").status == "error"


def test_an_action_deactivated_between_two_calls_of_a_run_stops_the_second(world):
    run = _Run(world)
    assert run.call("c1").outcome == "ok"
    action = world.actions["list_payments"]
    action.is_active = False
    action.save()

    record = run.call("c2")
    assert record.outcome == "error" and "deactivated" in (record.result.error or "")


def test_new_credentials_saved_between_two_calls_of_a_run_are_redacted_from_the_second(world):
    world.erp.auth_type = "bearer"
    connector_save(connector=world.erp, actor=None, secrets={"auth_secret": "old-token-123456"})
    run = _Run(world)
    assert run.call("c1").outcome == "ok"
    connector_save(connector=world.erp, actor=None, secrets={"auth_secret": "new-token-654321"})

    # the secret in the arguments is redacted from the call's row, and the new token was sent
    run.call("c2", "erp__create_payment", {**PAY, "currency": "new-token-654321"})
    row = ConnectorCallLog.objects.unscoped().get(tool_call_id="c2")
    assert "new-token-654321" not in str(row.arguments)


def test_read_only_mode_switched_on_between_two_calls_of_a_run_blocks_the_second_write(world):
    run = _Run(world)
    assert run.call("c1", "erp__create_payment", PAY).outcome == "ok"
    organization_set_read_only(organization=world.org, enabled=True, reason="audit", actor=None)

    record = run.call("c2", "erp__create_payment", PAY)
    assert record.outcome == "blocked"
    assert ConnectorCallLog.objects.unscoped().get(tool_call_id="c2").status == "blocked_read_only"


def test_a_rate_limit_added_between_two_calls_of_a_run_counts_from_the_second(world):
    run = _Run(world)
    assert run.call("c1").outcome == "ok"
    RateLimitFactory(organization=world.org, connector=world.erp, max_calls=1)

    assert run.call("c2").outcome == "ok"
    record = run.call("c3")
    assert record.outcome == "blocked"
    assert ConnectorCallLog.objects.unscoped().get(tool_call_id="c3").status == "blocked_rate_limit"


class _AdminDeactivatesTheConnectorOnce(PreToolUseHook):
    """Runs after every guard rail, the audit log's recorder included: an admin deactivates the call's
    connector between the guard rails' judgement of the first call and that call."""

    name = "admin_in_between"
    priority = RECORD_PRIORITY + 1

    def __init__(self, world: Any) -> None:
        self.world = world
        self.done = False

    async def pre_tool_use(self, ctx: HookContext) -> PreVerdict:
        if not self.done:
            self.done = True
            self.world.erp.is_active = False
            await sync_to_async(connector_save)(connector=self.world.erp, actor=None)
        return ALLOW


class _JudgedVersions(PostToolUseHook):
    def __init__(self) -> None:
        self.versions: dict[str, int | None] = {}

    async def post_tool_use(self, ctx: HookContext, result: ToolResult) -> PostVerdict:
        self.versions[ctx.tool_call_id] = ctx.call.config_version
        return ALLOW


def test_the_tool_acts_on_the_configuration_version_its_guard_rails_judged_the_call_under(world):
    # given the configuration of the organisation's current version cached by an earlier call
    _one_call(world, "warm-up")
    judged = ConfigVersion.objects.get(pk=world.org.pk).version
    versions = _JudgedVersions()
    run = _Run(world, more_hooks=(_AdminDeactivatesTheConnectorOnce(world), versions))

    # when an admin deactivates the connector after the guard rails judged a call, before it runs
    record = run.call("c1")

    # then the call is made as it was judged, under the version the guard rails read (not a newer one)
    assert ConfigVersion.objects.get(pk=world.org.pk).version != judged  # the change bumped it
    assert versions.versions == {"c1": judged}
    assert record.outcome == "ok", record.result
    # and the next call is judged, and made, under the new version: the connector is off
    record = run.call("c2")
    assert versions.versions["c2"] == ConfigVersion.objects.get(pk=world.org.pk).version
    assert record.outcome == "error" and "deactivated" in (record.result.error or "")
