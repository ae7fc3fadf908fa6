"""Usage rows of two organisations, written directly (the dashboard only reads them)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from agents.models import Agent, ModelConfig, Run
from agents.usage.models import UsageRecord
from tests.agents.factories import AgentFactory, ConversationFactory, ModelConfigFactory, RunFactory
from tests.factories import member_of

UTC = ZoneInfo("UTC")
RANGE = {"from": "2026-11-01", "to": "2026-11-30"}


def at(day: int, hour: int = 12) -> datetime:
    return datetime(2026, 11, day, hour, tzinfo=UTC)


def usage(org, *, user, agent, endpoint, run, when, prompt, completion, cost=None, currency="", **extra):
    return UsageRecord.objects.create(
        organization=org,
        user=user,
        agent=agent,
        model_config=endpoint,
        run=run,
        purpose="tool_loop",
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion,
        cost=None if cost is None else Decimal(cost),
        currency=currency,
        created_at=when,
        **extra,
    )


@dataclass
class World:
    agent: Agent
    other_agent: Agent
    endpoint: ModelConfig
    cheap_endpoint: ModelConfig
    run_big: Run
    run_small: Run
    foreign_run: Run


@pytest.fixture
def world(org, other_org, org_admin, member, other_admin):
    """Acme: two agents, two endpoints, two runs over three weeks of November 2026 (cost in USD, and
    one endpoint without prices); Globex: one large row that must never show in Acme's figures."""
    agent = AgentFactory(organization=org, name="Buyer")
    other_agent = AgentFactory(organization=org, name="Helper")
    endpoint = ModelConfigFactory(organization=org, name="gpt-big")
    cheap = ModelConfigFactory(organization=org, name="local-free")
    run_big = RunFactory(conversation=ConversationFactory(organization=org, user=org_admin, agent=agent))
    run_small = RunFactory(conversation=ConversationFactory(organization=org, user=member, agent=other_agent))
    common = {"agent": agent, "endpoint": endpoint, "run": run_big, "user": org_admin}
    usage(
        org,
        **common,
        when=at(2),
        prompt=1000,
        completion=200,
        cost="0.012",
        currency="USD",
        cached_tokens=100,
    )
    usage(org, **common, when=at(3), prompt=3000, completion=500, cost="0.035", currency="USD")
    usage(
        org, user=member, agent=other_agent, endpoint=endpoint, run=run_small,
        when=at(10), prompt=400, completion=100, cost="0.005", currency="USD", reasoning_tokens=30,
    )  # fmt: skip
    usage(
        org,
        user=member,
        agent=other_agent,
        endpoint=cheap,
        run=run_small,
        when=at(17),
        prompt=50,
        completion=50,
    )
    foreign_agent = AgentFactory(organization=other_org, name="Spy")
    foreign_endpoint = ModelConfigFactory(organization=other_org, name="globex-model")
    foreign_run = RunFactory(
        conversation=ConversationFactory(organization=other_org, user=other_admin, agent=foreign_agent)
    )
    usage(
        other_org, user=other_admin, agent=foreign_agent, endpoint=foreign_endpoint, run=foreign_run,
        when=at(3), prompt=999_000, completion=1000, cost="99", currency="USD",
    )  # fmt: skip
    return World(agent, other_agent, endpoint, cheap, run_big, run_small, foreign_run)


@pytest.fixture
def admin_of_both(org, other_org):
    """An admin of Acme who is only a member of Globex."""
    user = member_of(org, "admin", username="bea")
    from tests.factories import MembershipFactory

    MembershipFactory(organization=other_org, user=user, role="member")
    return user
