"""The guard rails of one connector call read the organisation once: its read-only flag and configuration
version; the approval policies and rate limits come from the process's cache for that version, so they
cover exactly what the database says and an admin's change applies to the very next call."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from django.db import connection
from django.db.models import Q
from django.test.utils import CaptureQueriesContext

from agents.engine.hooks import HookContext, HookRegistry
from agents.engine.tool_context import ToolCallContext
from hooks.call_config import call_guard_config
from hooks.catalog import ActionInfo
from hooks.models import ApprovalPolicy
from hooks.registry import guard_rail_hooks
from tests.factories import ConnectorActionFactory, ConnectorFactory
from tests.hooks.factories import ApprovalPolicyFactory, RateLimitFactory
from tests.hooks.harness import blueprint_for
from tests.hooks.scenario import build_purchasing

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_config_cache")]

GUARD_TABLES = ('FROM "hooks_approvalpolicy"', 'FROM "hooks_ratelimit"', 'FROM "platform_core_organization"')


@pytest.fixture
def erp(org):
    connector = ConnectorFactory(organization=org, name="erp")
    return {
        "connector": connector,
        "pay": ConnectorActionFactory(connector=connector, name="pay", method="POST", path_template="/pay"),
        "list": ConnectorActionFactory(connector=connector, name="list", method="GET", path_template="/list"),
        "other": ConnectorActionFactory(organization=org, name="find", method="GET"),
    }


def policies_matching(*, organization_id: int, info: ActionInfo) -> list[ApprovalPolicy]:
    """The reference: active policies covering the action (by action, or by connector), in name order,
    as one database query."""
    by_connector = Q(connectors__pk=info.connector_id)
    if info.is_write is False:
        by_connector &= Q(writes_only=False)
    return list(
        ApprovalPolicy.objects.unscoped()
        .filter(organization_id=organization_id, is_active=True)
        .filter(Q(actions__pk=info.action_id) | by_connector)
        .distinct()
        .order_by("name", "pk")
    )


def _policies_for(org, action):
    config = call_guard_config(org.pk)
    return [p.pk for p in config.policies_for(ActionInfo.from_action(action))]


@pytest.mark.parametrize(
    "shape",
    ["by-action", "by-connector-writes", "by-connector-all", "inactive", "both", "two-by-name"],
)
def test_the_cached_policies_cover_exactly_what_the_database_query_covers(org, other_org, erp, shape):
    connector, pay, list_ = erp["connector"], erp["pay"], erp["list"]
    if shape == "by-action":
        ApprovalPolicyFactory(organization=org, actions=[list_])
    elif shape == "by-connector-writes":
        ApprovalPolicyFactory(organization=org, connectors=[connector])
    elif shape == "by-connector-all":
        ApprovalPolicyFactory(organization=org, connectors=[connector], writes_only=False)
    elif shape == "inactive":
        ApprovalPolicyFactory(organization=org, actions=[pay], is_active=False)
    elif shape == "both":
        ApprovalPolicyFactory(organization=org, actions=[list_], connectors=[connector])
    else:
        ApprovalPolicyFactory(organization=org, name="z", actions=[pay])
        ApprovalPolicyFactory(organization=org, name="a", connectors=[connector])
    ApprovalPolicyFactory(organization=other_org, connectors=[ConnectorFactory(organization=other_org)])

    for action in (pay, list_, erp["other"]):
        expected = [
            p.pk for p in policies_matching(organization_id=org.pk, info=ActionInfo.from_action(action))
        ]
        assert _policies_for(org, action) == expected, action.name


def test_a_policy_or_limit_an_admin_adds_applies_to_the_next_call(org, erp):
    assert _policies_for(org, erp["list"]) == []
    policy = ApprovalPolicyFactory(organization=org)
    policy.actions.add(erp["list"])  # the admin ticks the action afterwards
    assert _policies_for(org, erp["list"]) == [policy.pk]

    RateLimitFactory(organization=org, connector=erp["connector"], max_calls=5)
    limits = call_guard_config(org.pk).rate_limits_for(ActionInfo.from_action(erp["pay"]))
    assert [limit.max_calls for limit in limits] == [5]


def test_an_organisation_that_no_longer_exists_has_no_configuration(org):
    assert call_guard_config(org.pk + 1000) is None


@pytest.fixture
def world(db):
    return build_purchasing(llm_base_url="http://127.0.0.1:9/v1", erp_base_url="http://127.0.0.1:9")


def _pre_hooks_of_a_call(hooks: HookRegistry, call_id: str) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        outcome = async_to_sync(hooks.run_pre)(
            HookContext(ToolCallContext("erp__list_payments", call_id, 1), {})
        )
    assert outcome.allowed, outcome.reason
    return [q["sql"] for q in captured.captured_queries if any(t in q["sql"] for t in GUARD_TABLES)]


def test_the_guard_rails_of_a_call_read_the_organisation_once_and_the_policies_once_per_change(world):
    RateLimitFactory(organization=world.org, connector=world.erp, max_calls=100)
    hooks = HookRegistry(guard_rail_hooks(blueprint_for(world)).hooks)

    first = _pre_hooks_of_a_call(hooks, "c1")
    second = _pre_hooks_of_a_call(hooks, "c2")

    assert len([q for q in first if 'FROM "platform_core_organization"' in q]) == 1
    assert any('FROM "hooks_approvalpolicy"' in q for q in first)
    assert len(second) == 1 and 'FROM "platform_core_organization"' in second[0]
