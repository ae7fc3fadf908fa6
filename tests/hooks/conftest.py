"""Fixtures of the guard-rail tests.

Celery tasks run eagerly here (``task_always_eager``): ``.delay()`` runs the task at once in the thread
that committed, exactly the code a worker runs, so a test sees the card sent, retried or failed without a
broker or a worker process. Eager retries are re-applied at once (Celery ignores the countdown in eager
mode), so the countdown itself (backoff, honouring ``x-ogw-ratelimit-reset``) is tested on its own.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.core.cache import cache

from agents import runtime
from connectors.services import CallContext
from connectors.tools import connector_tools_for
from platform_core import celery_app
from tests.fakes.http_service import LoopbackHTTPService, running_http_service


@pytest.fixture(autouse=True)
def celery_eager() -> Iterator[None]:
    conf = celery_app.conf
    saved = (conf.task_always_eager, conf.task_eager_propagates)
    conf.task_always_eager, conf.task_eager_propagates = True, False
    try:
        yield
    finally:
        conf.task_always_eager, conf.task_eager_propagates = saved


@pytest.fixture(autouse=True)
def fresh_rate_counters() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()


def connector_tool_factory(blueprint: runtime.RunBlueprint) -> list:
    """Connector actions as the run's tools, with the call log left to the audit hook when it is
    installed: what the platform's tool factory does."""
    by_hook = any(getattr(f, "writes_call_logs", False) for f in runtime.HOOK_FACTORIES)
    context = CallContext(
        organization_id=blueprint.organization_id,
        user_id=blueprint.user_id,
        agent_id=str(blueprint.agent_id),
        conversation_id=str(blueprint.conversation_id),
        run_id=str(blueprint.run_id),
        call_log_by_hook=by_hook,
    )
    return connector_tools_for(
        organization_id=blueprint.organization_id, connector_ids=blueprint.connector_ids, context=context
    )


@pytest.fixture
def connector_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every run gets its agent's connector actions as tools."""
    monkeypatch.setattr(runtime, "TOOL_FACTORIES", [connector_tool_factory])


@pytest.fixture
def http_service() -> Iterator[LoopbackHTTPService]:
    """A real HTTP service on loopback that records every request (the connectors' target)."""
    with running_http_service() as service:
        yield service
