"""The built-in hooks of every run, their fixed order, per-agent settings, truncation and session context."""

from __future__ import annotations

from datetime import date

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async

from agents import runtime
from agents.engine.hooks import ALLOW, Block, HookContext
from agents.engine.tool_context import ToolCallContext
from agents.engine.tools import Artifact, ToolResult
from connectors.models import ConnectorCallLog
from connectors.tools import connector_tools_for_run
from hooks.audit import AuditHook
from hooks.catalog import ActionInfo
from hooks.models import AgentHookSettings, ApprovalRequest
from hooks.registry import guard_rail_hooks
from hooks.session_context import session_context_text
from hooks.truncate import TruncateResult
from platform_core.services import organization_set_read_only
from tests.fakes.openai_server import call, text, tool_calls
from tests.hooks.factories import ApprovalPolicyFactory, RateLimitFactory
from tests.hooks.harness import run_agent
from tests.hooks.scenario import add_query_action, build_purchasing


def test_the_runtime_builds_every_run_s_hooks_with_the_guard_rails():
    assert runtime.guard_rail_hooks is guard_rail_hooks


@pytest.mark.django_db
def test_the_guard_rails_declare_the_call_logs_they_write_and_the_run_s_connector_tools_leave_them(
    http_service,
):
    from tests.hooks.harness import blueprint_for

    world = build_purchasing(llm_base_url="http://127.0.0.1:9/v1", erp_base_url=http_service.base_url)
    blueprint = blueprint_for(world)

    rails = guard_rail_hooks(blueprint)
    tools = connector_tools_for_run(blueprint)

    assert rails.writes_call_logs is True and any(isinstance(h, AuditHook) for h in rails.hooks)
    assert tools and all(tool.call_log_by_hook is rails.writes_call_logs for tool in tools)


def truncate(limit, content, **extra):
    hook = TruncateResult(limit=limit, language="en")
    ctx = HookContext(ToolCallContext("t", "c", 1), {}, outcome="ok")
    return async_to_sync(hook.post_tool_use)(ctx, ToolResult(content=content, **extra))


def test_a_long_result_is_cut_with_a_note_saying_how_much_was_left_out():
    verdict = truncate(100, "x" * 350)
    cut = verdict.value.content
    assert cut.startswith("x" * 100) and "x" * 101 not in cut
    assert "250 of 350 characters were left out" in cut and "first 100" in cut


def test_a_result_within_the_limit_is_untouched():
    assert truncate(100, "x" * 100) == ALLOW


def test_truncation_keeps_artifacts_and_error_flags():
    artifact = Artifact("report.html", "text/html", "<p>hi</p>")
    verdict = truncate(10, "y" * 50, is_error=True, error="boom", artifacts=(artifact,))
    result = verdict.value
    assert result.artifacts == (artifact,) and result.is_error and result.error == "boom"


def test_session_context_names_the_org_the_user_the_date_and_the_allowed_actions():
    infos = [
        ActionInfo("erp__create_payment", None, "create_payment", None, "erp", "http", True),
        ActionInfo("erp__list_payments", None, "list_payments", None, "erp", "http", False),
    ]
    text_ = session_context_text(
        organization_name="Acme",
        organization_slug="acme",
        username="mia",
        today=date(2025, 3, 1),
        actions=infos,
        language="en",
    )
    assert "Organisation: Acme (acme)" in text_ and "User: mia" in text_ and "2025-03-01" in text_
    assert "erp__create_payment (writes data)" in text_ and "erp__list_payments (read-only)" in text_
    chinese = session_context_text(
        organization_name="Acme",
        organization_slug="acme",
        username="mia",
        today=date(2025, 3, 1),
        actions=[],
        language="zh-hans",
    )
    assert "组织：Acme" in chinese


@pytest.fixture
async def world(scripted_llm, http_service):
    def build():
        world = build_purchasing(llm_base_url=scripted_llm.base_url, erp_base_url=http_service.base_url)
        add_query_action(world.erp, "export", "/big", param="bytes", json_type="integer")
        return world

    return await database_sync_to_async(build)()


pytestmark_db = pytest.mark.django_db(transaction=True)


@pytestmark_db
@pytest.mark.usefixtures("connector_tools")
async def test_the_model_sees_at_most_8000_characters_of_a_result_and_the_log_the_real_size(
    world, scripted_llm, make_llm
):
    scripted_llm.script(tool_calls(call("erp__export", {"bytes": 20000}, id="big")), text("Exported."))
    result = await run_agent(world, make_llm, "Export everything")
    observation = result.tool_calls[0].observation
    assert len(observation) < 8400 and "12000 of 20000 characters were left out" in observation
    tool_messages = [m for m in scripted_llm.requests[1]["messages"] if m["role"] == "tool"]
    assert "12000 of 20000 characters were left out" in tool_messages[0]["content"]
    log = await ConnectorCallLog.objects.unscoped().aget(tool_call_id="big")
    assert log.response_bytes == 20000  # the audit hook ran before the cut


@pytestmark_db
@pytest.mark.usefixtures("connector_tools")
async def test_an_agent_can_set_its_own_limit_or_switch_truncation_and_context_off(
    world, scripted_llm, make_llm
):
    settings = await database_sync_to_async(
        lambda: AgentHookSettings.objects.create(
            agent=world.agent, organization=world.org, max_observation_chars=500
        )
    )()
    scripted_llm.script(tool_calls(call("erp__export", {"bytes": 2000}, id="a")), text("Done."))
    result = await run_agent(world, make_llm, "Export")
    assert "1500 of 2000 characters were left out" in result.tool_calls[0].observation
    system = scripted_llm.requests[0]["messages"][0]["content"]
    assert "Session context" in system and world.requester.username in system

    settings.truncate_enabled = False
    settings.session_context_enabled = False
    await database_sync_to_async(settings.save)()
    scripted_llm.script(tool_calls(call("erp__export", {"bytes": 9000}, id="b")), text("Done."))
    result = await run_agent(world, make_llm, "Export")
    assert len(result.tool_calls[0].observation) == 9000
    assert "Session context" not in str(scripted_llm.requests[-2]["messages"][0])


@pytestmark_db
@pytest.mark.usefixtures("connector_tools")
async def test_the_session_context_lists_the_agents_actions_in_the_system_prompt(
    world, scripted_llm, make_llm
):
    scripted_llm.script(text("Hello."))
    await run_agent(world, make_llm, "Hi")
    system = scripted_llm.requests[0]["messages"][0]["content"]
    assert f"Organisation: {world.org.name} ({world.org.slug})" in system
    assert "erp__create_payment (writes data)" in system and "ledger__query (read-only)" in system


@pytestmark_db
@pytest.mark.usefixtures("connector_tools")
async def test_read_only_mode_blocks_before_an_approval_is_asked_or_a_rate_limit_counts(
    world, scripted_llm, make_llm
):
    def configure():
        organization_set_read_only(organization=world.org, actor=None, enabled=True, reason="freeze")
        ApprovalPolicyFactory(organization=world.org, actions=[world.actions["create_payment"]])
        RateLimitFactory(organization=world.org, connector=world.erp, max_calls=1)

    await database_sync_to_async(configure)()
    scripted_llm.script(
        tool_calls(
            call("erp__create_payment", {"amount": 1, "currency": "CNY"}, id="w"),
            call("erp__list_payments", {}, id="r"),
        ),
        text("Done."),
    )
    result = await run_agent(world, make_llm, "Pay and list")
    assert [r.outcome for r in result.tool_calls] == ["blocked", "ok"]  # the blocked write used no quota
    assert await ApprovalRequest.objects.unscoped().acount() == 0
    statuses = {log.tool_call_id: log.status async for log in ConnectorCallLog.objects.unscoped().all()}
    assert statuses == {"w": "blocked_read_only", "r": "ok"}


@pytest.mark.django_db
def test_the_guard_rails_speak_the_language_the_run_was_started_in(scripted_llm, http_service):
    from django.utils import translation

    from hooks.read_only import ReadOnlyGuard
    from tests.hooks.harness import blueprint_for

    world = build_purchasing(llm_base_url=scripted_llm.base_url, erp_base_url=http_service.base_url)
    organization_set_read_only(organization=world.org, actor=None, enabled=True, reason="审计")
    with translation.override("zh-hans"):
        hooks = guard_rail_hooks(blueprint_for(world)).hooks
    guard = next(h for h in hooks if isinstance(h, ReadOnlyGuard))
    verdict = async_to_sync(guard.pre_tool_use)(
        HookContext(ToolCallContext("erp__create_payment", "c", 1), {"amount": 1, "currency": "CNY"})
    )
    assert verdict == Block("组织处于只读模式：审计")
