"""A run's budgets come from a per-process cache under the organisation's configuration version: no query
when nothing changed, and any budget saved or deleted (in any process) is seen by the next run."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.usage.budgets import budgets_for_run
from platform_core.config_cache import config_cache_forget
from platform_core.config_version import config_version_of
from platform_core.models import Organization, Role
from tests.agents.factories import AgentFactory, BudgetFactory
from tests.factories import OrganizationFactory, member_of

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_cache():
    config_cache_forget()
    yield
    config_cache_forget()


def _version(org) -> int:
    return config_version_of(Organization.objects.select_related("config_version").get(pk=org.pk))


def _names(org, *, user=None, agent=None) -> list[str]:
    lines = budgets_for_run(
        organization_id=org.pk,
        user_id=user.pk if user else None,
        agent_id=agent.pk if agent else None,
        config_version=_version(org),
    )
    return sorted(line.name for line in lines)


def test_the_budgets_of_a_run_are_those_of_its_organisation_user_and_agent_only():
    org, other = OrganizationFactory(), OrganizationFactory()
    mia, max_ = member_of(org, Role.MEMBER), member_of(org, Role.MEMBER)
    agent, other_agent = AgentFactory(organization=org), AgentFactory(organization=org)
    BudgetFactory(organization=org, name="org", scope="organization", agent=None)
    BudgetFactory(organization=org, name="mia", scope="user", user=mia, agent=None)
    BudgetFactory(organization=org, name="max", scope="user", user=max_, agent=None)
    BudgetFactory(organization=org, name="agent", agent=agent)
    BudgetFactory(organization=org, name="other agent", agent=other_agent)
    BudgetFactory(organization=org, name="off", scope="organization", agent=None, active=False)
    BudgetFactory(organization=other, name="elsewhere", scope="organization", agent=None)

    assert _names(org, user=mia, agent=agent) == ["agent", "mia", "org"]
    assert _names(org, user=None, agent=None) == ["org"]
    uncached = budgets_for_run(organization_id=org.pk, user_id=mia.pk, agent_id=agent.pk)
    assert sorted(line.name for line in uncached) == ["agent", "mia", "org"]


def test_a_second_run_under_the_same_version_costs_no_query():
    org = OrganizationFactory()
    agent = AgentFactory(organization=org)
    BudgetFactory(organization=org, name="agent", agent=agent)
    version = _version(org)
    assert [
        b.name
        for b in budgets_for_run(
            organization_id=org.pk, user_id=None, agent_id=agent.pk, config_version=version
        )
    ] == ["agent"]
    with CaptureQueriesContext(connection) as queries:
        lines = budgets_for_run(
            organization_id=org.pk, user_id=None, agent_id=agent.pk, config_version=version
        )
    assert [line.name for line in lines] == ["agent"]
    assert len(queries) == 0


def test_a_budget_created_changed_or_deleted_is_seen_by_the_next_run():
    org = OrganizationFactory()
    agent = AgentFactory(organization=org)
    assert _names(org, agent=agent) == []

    budget = BudgetFactory(organization=org, name="agent", agent=agent)
    assert _names(org, agent=agent) == ["agent"]

    budget.active = False
    budget.save()
    assert _names(org, agent=agent) == []

    budget.active = True
    budget.limit = 5
    budget.save()
    (line,) = budgets_for_run(
        organization_id=org.pk, user_id=None, agent_id=agent.pk, config_version=_version(org)
    )
    assert line.limit == 5

    budget.delete()
    assert _names(org, agent=agent) == []
