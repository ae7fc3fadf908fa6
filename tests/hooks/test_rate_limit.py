"""Rate limits: per connector and per user limits set by admins, counted atomically in the cache, with
blocked calls explained to the model and recorded in the call log."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async

from agents.engine.hooks import ALLOW, Block, HookContext
from agents.engine.tool_context import ToolCallContext
from connectors.models import ConnectorCallLog
from hooks.catalog import action_catalog_for
from hooks.models import AgentHookSettings
from hooks.rate_limit import RateLimitHook, count_call
from tests.factories import member_of
from tests.fakes.openai_server import call, text, tool_calls
from tests.hooks.factories import RateLimitFactory
from tests.hooks.harness import run_agent
from tests.hooks.scenario import build_purchasing

LIST = ("erp__list_payments", {})
QUERY = ("ledger__query", {"sql": "SELECT 1"})


@pytest.fixture
def world(db, scripted_llm, http_service):
    return build_purchasing(llm_base_url=scripted_llm.base_url, erp_base_url=http_service.base_url)


def hook_for(world, user) -> RateLimitHook:
    catalog = action_catalog_for(organization_id=world.org.pk, connector_ids=[world.erp.pk, world.ledger.pk])
    return RateLimitHook(organization_id=world.org.pk, user_id=user.pk, catalog=catalog, language="en")


def attempt(hook, tool=LIST):
    name, args = tool
    return async_to_sync(hook.pre_tool_use)(HookContext(ToolCallContext(name, "c", 1), args))


def test_a_connector_limit_blocks_the_call_over_it_with_an_explanation(world):
    RateLimitFactory(
        organization=world.org, name="erp burst", connector=world.erp, max_calls=2, period_seconds=60
    )
    hook = hook_for(world, world.requester)
    assert attempt(hook) == ALLOW and attempt(hook) == ALLOW
    blocked = attempt(hook)
    assert isinstance(blocked, Block)
    assert blocked.reason.startswith(
        "rate limit 'erp burst' reached: at most 2 calls every 60 seconds to erp"
    )
    assert "for everyone together" in blocked.reason and "tried again in" in blocked.reason
    assert attempt(hook, QUERY) == ALLOW  # another connector is not limited


def test_a_shared_limit_counts_every_users_calls_together(world):
    RateLimitFactory(organization=world.org, connector=world.erp, max_calls=2, per_user=False)
    first, second = hook_for(world, world.requester), hook_for(world, world.approver)
    assert attempt(first) == ALLOW and attempt(second) == ALLOW
    assert isinstance(attempt(second), Block) and isinstance(attempt(first), Block)


def test_a_per_user_limit_counts_each_user_separately(world):
    RateLimitFactory(organization=world.org, connector=None, max_calls=1, per_user=True)
    mia, april = hook_for(world, world.requester), hook_for(world, world.approver)
    assert attempt(mia) == ALLOW
    blocked = attempt(mia, QUERY)  # no connector named: every connector counts
    assert isinstance(blocked, Block) and "all connectors for each user" in blocked.reason
    assert attempt(april) == ALLOW


def test_limits_are_read_fresh_and_inactive_ones_do_not_count(world):
    # A day's window: a minute's could roll over between the last two calls (seen once in CI).
    limit = RateLimitFactory(
        organization=world.org, connector=world.erp, max_calls=1, period_seconds=86400, is_active=False
    )
    hook = hook_for(world, world.requester)
    assert attempt(hook) == ALLOW and attempt(hook) == ALLOW
    limit.is_active = True
    limit.save()
    assert attempt(hook) == ALLOW
    assert isinstance(attempt(hook), Block)


def test_another_organisations_limits_do_not_apply(world, other_org):
    RateLimitFactory(organization=other_org, max_calls=1)
    hook = hook_for(world, world.requester)
    assert attempt(hook) == ALLOW and attempt(hook) == ALLOW


def test_a_new_window_starts_a_new_count(world):
    limit = RateLimitFactory(organization=world.org, max_calls=1, period_seconds=60)
    assert async_to_sync(count_call)(limit, user_id=None, now=120.0).count == 1
    assert async_to_sync(count_call)(limit, user_id=None, now=150.0).exceeded is True
    fresh = async_to_sync(count_call)(limit, user_id=None, now=180.0)
    assert fresh.count == 1 and fresh.exceeded is False and fresh.retry_in == 60


def test_the_count_is_atomic_under_concurrent_calls(world):
    limit = RateLimitFactory(organization=world.org, max_calls=1000, period_seconds=60)

    async def burst():
        import asyncio

        return await asyncio.gather(*(count_call(limit, user_id=None, now=60.0) for _ in range(50)))

    counts = sorted(s.count for s in async_to_sync(burst)())
    assert counts == list(range(1, 51))


def test_rate_limit_messages_are_translated(world):
    RateLimitFactory(organization=world.org, name="erp", connector=world.erp, max_calls=1)
    hook = hook_for(world, world.requester)
    hook.language = "zh-hans"
    attempt(hook)
    assert "已达到频率限制" in attempt(hook).reason


@pytest.mark.django_db(transaction=True)
async def test_a_run_over_the_limit_is_told_why_and_the_call_log_says_blocked_rate_limit(
    scripted_llm, http_service, make_llm, connector_tools
):
    world = await database_sync_to_async(
        lambda: build_purchasing(llm_base_url=scripted_llm.base_url, erp_base_url=http_service.base_url)
    )()
    await database_sync_to_async(
        lambda: RateLimitFactory(organization=world.org, connector=world.erp, max_calls=1, per_user=True)
    )()
    scripted_llm.script(
        tool_calls(call("erp__list_payments", {}, id="a"), call("erp__list_payments", {}, id="b")),
        text("One list worked."),
    )
    result = await run_agent(world, make_llm, "List payments twice")
    outcomes = {r.tool_call_id: (r.outcome, r.observation) for r in result.tool_calls}
    assert outcomes["a"][0] == "ok"
    assert outcomes["b"][0] == "blocked" and "rate limit" in outcomes["b"][1]
    assert len(http_service.requests_to("/payments")) == 1
    statuses = {log.tool_call_id: log.status async for log in ConnectorCallLog.objects.unscoped().all()}
    assert statuses == {"a": "ok", "b": "blocked_rate_limit"}


@pytest.mark.django_db(transaction=True)
async def test_an_agent_with_rate_limits_switched_off_is_not_limited(
    scripted_llm, http_service, make_llm, connector_tools
):
    world = await database_sync_to_async(
        lambda: build_purchasing(llm_base_url=scripted_llm.base_url, erp_base_url=http_service.base_url)
    )()

    def configure():
        RateLimitFactory(organization=world.org, connector=world.erp, max_calls=1)
        AgentHookSettings.objects.create(agent=world.agent, organization=world.org, rate_limits_enabled=False)
        member_of(world.org, "member", username="extra")

    await database_sync_to_async(configure)()
    scripted_llm.script(
        tool_calls(call("erp__list_payments", {}, id="a"), call("erp__list_payments", {}, id="b")),
        text("Both worked."),
    )
    result = await run_agent(world, make_llm, "List payments twice")
    assert [r.outcome for r in result.tool_calls] == ["ok", "ok"]
