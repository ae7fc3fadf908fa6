"""The usage rows go with the run's events: in the writer's batch, and on PostgreSQL inside the batch's one
statement (no extra round trip per model call)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agents.models import RunEvent, UsageRecord
from agents.runs.events import store
from agents.runs.events.sql import PendingEvent
from agents.runs.events.store import Fence
from agents.usage.rows import PendingUsage
from tests.agents.factories import AgentFactory, ConversationFactory, ModelConfigFactory, RunFactory

pytestmark = pytest.mark.django_db(transaction=True)


def _running_run(owner: str):
    conversation = ConversationFactory()
    return RunFactory(
        conversation=conversation,
        status="running",
        lease_owner=owner,
        lease_expires_at=timezone.now() + timedelta(seconds=30),
    )


def _row(run, *, purpose: str, cost: Decimal | None) -> PendingUsage:
    config = ModelConfigFactory(organization=run.organization)
    agent = AgentFactory(organization=run.organization)
    return PendingUsage(
        organization_id=run.organization_id,
        user_id=run.user_id,
        agent_id=agent.pk,
        model_config_id=config.pk,
        run_id=run.pk,
        purpose=purpose,
        model="m",
        prompt_tokens=1000,
        completion_tokens=200,
        cached_tokens=400,
        reasoning_tokens=50,
        total_tokens=1200,
        estimated=False,
        cost=cost,
        currency="USD" if cost is not None else "",
    )


def test_a_fenced_batch_writes_its_events_and_usage_rows_together():
    run = _running_run("here#1")
    rows = [_row(run, purpose="tool_loop", cost=Decimal("0.003")), _row(run, purpose="synthesis", cost=None)]
    events = [PendingEvent(run.conversation_id, run.pk, 1, "step", {"type": "thinking"})]

    with CaptureQueriesContext(connection) as queries:
        store._write_batch(run.pk, events, [], rows, [], Fence("here#1", 30))

    if connection.vendor == "postgresql":
        # the lease renewal, the events and the usage rows: one statement, one round trip
        assert len(queries) == 1
        assert "usage" in queries[0]["sql"].lower()
    stored = list(UsageRecord.objects.unscoped().filter(run=run).order_by("id"))
    assert [(r.purpose, r.cost, r.cached_tokens, r.reasoning_tokens) for r in stored] == [
        ("tool_loop", Decimal("0.003"), 400, 50),
        ("synthesis", None, 400, 50),
    ]
    assert RunEvent.objects.filter(run=run).count() == 1


def test_several_runs_batches_write_every_runs_usage_rows():
    runs = [_running_run(f"here#{n}") for n in range(3)]
    parts = [
        (
            run.pk,
            [PendingEvent(run.conversation_id, run.pk, 1, "step", {})],
            [],
            [_row(run, purpose="router", cost=None)],
            [],
            Fence(f"here#{n}", 30),
        )
        for n, run in enumerate(runs)
    ]

    with CaptureQueriesContext(connection) as queries:
        store._write_batches(parts)

    if connection.vendor == "postgresql":
        assert len(queries) == 1
    for run in runs:
        assert list(UsageRecord.objects.unscoped().filter(run=run).values_list("purpose", flat=True)) == [
            "router"
        ]
