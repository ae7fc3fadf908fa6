"""A run's setup that every run of an agent loads the same is cached per process, under the organisation's
configuration version: later runs skip those queries, and any admin change is seen by the next run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents import runtime
from agents.models import ExecutionMode, ModelConfig, ModelRole
from hooks.truncate import TruncateResult
from platform_core.config_cache import MAX_OWNERS, config_cached
from platform_core.models import ConfigVersion, Organization
from tests.agents.factories import (
    AgentFactory,
    ConversationFactory,
    MessageFactory,
    ModelConfigFactory,
    RunFactory,
)
from tests.factories import ConnectorActionFactory, ConnectorFactory, OrganizationFactory
from tests.hooks.factories import AgentHookSettingsFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_config_cache")]

# What the cached loads select from (the run's own query joins the agent's model, but from agents_run).
CACHED_TABLES = tuple(
    f'FROM "{table}"'
    for table in (
        "connectors_connectoraction",
        "hooks_agenthooksettings",
        "agents_modelconfig",
        "connectors_connector",
        "agents_budget",
        "agents_skill",
    )
)


@pytest.fixture
def agent(org):
    ModelConfigFactory(organization=org, name="default", is_default=True)
    agent = AgentFactory(organization=org)
    erp = ConnectorFactory(organization=org, name="erp")
    ConnectorActionFactory(connector=erp, name="list_orders")
    agent.connectors.add(erp)
    return agent


def _setup_of_a_new_run(agent: Any) -> tuple[runtime.RunBlueprint, list[str], list[Any]]:
    """What the run manager builds for a run: blueprint, tool names, hooks."""
    conversation = ConversationFactory(organization=agent.organization, agent=agent)
    run = RunFactory(conversation=conversation, status="running")
    MessageFactory(conversation=conversation, run=run, content="What is open?")
    blueprint = runtime.runtime_build(run.pk)
    hooks = runtime.guard_rail_hooks(blueprint).hooks
    return blueprint, sorted(runtime.tools_for(blueprint).names()), hooks


def _queries_of(build: Callable[[], Any]) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        build()
    return [q["sql"] for q in captured.captured_queries]


def _setup_queries(agent: Any) -> list[str]:
    """The queries of building a run's setup (its rows are created beforehand)."""
    conversation = ConversationFactory(organization=agent.organization, agent=agent)
    run = RunFactory(conversation=conversation, status="running")
    MessageFactory(conversation=conversation, run=run, content="What is open?")
    return _queries_of(lambda: (runtime.hooks_for(b := runtime.runtime_build(run.pk)), runtime.tools_for(b)))


def test_a_later_run_of_an_unchanged_agent_loads_none_of_its_setup_again(agent):
    first = _setup_queries(agent)
    second = _setup_queries(agent)

    assert any(table in sql for sql in first for table in CACHED_TABLES)
    assert not [sql for sql in second if any(table in sql for table in CACHED_TABLES)]
    # connector ids, default model, the agent's skills, actions, hook settings, the organisation's budgets
    assert len(second) == len(first) - 6


def test_a_run_loads_its_connector_actions_once_for_its_tools_and_its_guard_rails(agent):
    queries = _setup_queries(agent)
    assert len([sql for sql in queries if 'FROM "connectors_connectoraction"' in sql]) == 1


def test_a_plan_mode_run_caches_the_organisations_models_by_role_too(agent, org):
    agent.execution_mode = ExecutionMode.PLAN
    agent.save()
    ModelConfigFactory(organization=org, name="quick", role=ModelRole.FAST, model="fast-1")
    first, _, _ = _setup_of_a_new_run(agent)
    second = _setup_queries(agent)

    assert first.role_endpoints[ModelRole.FAST].model == "fast-1"
    assert not [sql for sql in second if 'FROM "agents_modelconfig"' in sql]


def _deactivate_connector(agent: Any) -> None:
    connector = agent.connectors.get()
    connector.is_active = False
    connector.save()


def _add_action(agent: Any) -> None:
    ConnectorActionFactory(connector=agent.connectors.get(), name="list_invoices")


def _delete_action(agent: Any) -> None:
    agent.connectors.get().actions.get(name="list_orders").delete()


def _add_connector_from_its_side(agent: Any) -> None:
    crm = ConnectorFactory(organization=agent.organization, name="crm")
    ConnectorActionFactory(connector=crm, name="find_customer")
    crm.agents.add(agent)


def _remove_connector(agent: Any) -> None:
    agent.connectors.clear()


def _delete_connector(agent: Any) -> None:
    agent.connectors.get().delete()


@pytest.mark.parametrize(
    ("change", "tools_after"),
    [
        (_deactivate_connector, []),
        (_add_action, ["erp__list_invoices", "erp__list_orders"]),
        (_delete_action, []),
        (_add_connector_from_its_side, ["crm__find_customer", "erp__list_orders"]),
        (_remove_connector, []),
        (_delete_connector, []),
    ],
    ids=[
        "connector-deactivated",
        "action-added",
        "action-deleted",
        "connector-added",
        "connector-removed",
        "connector-deleted",
    ],
)
def test_the_next_run_after_an_admin_change_sees_the_change(agent, change, tools_after):
    _, tools_before, _ = _setup_of_a_new_run(agent)
    assert tools_before == ["erp__list_orders"]

    change(agent)

    _, tools, _ = _setup_of_a_new_run(agent)
    assert tools == tools_after


def test_the_next_run_after_hook_settings_change_gets_the_new_guard_rails(agent):
    _, _, hooks = _setup_of_a_new_run(agent)
    assert any(isinstance(h, TruncateResult) for h in hooks)

    AgentHookSettingsFactory(agent=agent, truncate_enabled=False)

    _, _, hooks = _setup_of_a_new_run(agent)
    assert not any(isinstance(h, TruncateResult) for h in hooks)


def test_the_next_run_after_a_new_default_model_uses_it(agent, org):
    first, _, _ = _setup_of_a_new_run(agent)
    assert first.endpoint.model == "scripted-model"

    ModelConfig.objects.unscoped().filter(organization=org).update(
        is_default=False
    )  # no signal: not seen yet
    ModelConfigFactory(organization=org, name="newer", is_default=True, model="newer-model")

    second, _, _ = _setup_of_a_new_run(agent)
    assert second.endpoint.model == "newer-model"


def test_an_agents_own_change_is_seen_by_its_next_run(agent):
    _setup_of_a_new_run(agent)
    agent.instructions = "Answer in one line."
    agent.save()
    blueprint, _, _ = _setup_of_a_new_run(agent)
    assert blueprint.instructions == "Answer in one line."


def test_a_change_in_another_organisation_leaves_this_ones_cache_alone(agent, other_org):
    _setup_of_a_new_run(agent)
    ConnectorFactory(organization=other_org, name="elsewhere")
    assert not [sql for sql in _setup_queries(agent) if any(t in sql for t in CACHED_TABLES)]


def test_every_change_gives_the_organisation_a_new_version(agent, org):
    seen = {ConfigVersion.objects.get(pk=org.pk).version}
    for change in (_add_action, _deactivate_connector, _remove_connector):
        change(agent)
        seen.add(ConfigVersion.objects.get(pk=org.pk).version)
    assert len(seen) == 4


def test_a_new_organisation_starts_with_a_version_of_its_own():
    first, second = OrganizationFactory(), OrganizationFactory()
    versions = {ConfigVersion.objects.get(pk=o.pk).version for o in (first, second)}
    assert len(versions) == 2 and 0 not in versions


def test_an_organisation_deleted_with_its_agents_and_connectors_leaves_nothing_behind(agent, org):
    Organization.objects.filter(pk=org.pk).delete()
    connection.check_constraints()  # deferred foreign keys: what a commit would check
    assert not ConfigVersion.objects.filter(pk=org.pk).exists()


def test_a_cached_value_is_only_ever_served_at_the_version_it_was_loaded_under():
    assert config_cached("a", 2, "k", lambda: "new") == "new"
    assert config_cached("a", 1, "k", lambda: "old") == "old"  # a run that read the old version late
    assert config_cached("a", 2, "k", lambda: "loaded again") == "loaded again"
    assert config_cached("a", 2, "k", lambda: "not loaded") == "loaded again"


def test_the_cache_forgets_the_least_recently_used_agents_beyond_its_bound():
    for n in range(MAX_OWNERS + 1):
        config_cached(n, 1, "k", lambda n=n: n)
    assert config_cached(0, 1, "k", lambda: "loaded again") == "loaded again"
    assert config_cached(MAX_OWNERS, 1, "k", lambda: "loaded again") == MAX_OWNERS
