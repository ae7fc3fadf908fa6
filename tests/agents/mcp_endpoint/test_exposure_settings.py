"""An org admin chooses which agents are exposed over MCP, in the API as in the admin; off by default."""

from __future__ import annotations

import pytest

from agents.models import Agent
from tests.agents.factories import AgentFactory

pytestmark = pytest.mark.django_db


def test_an_agent_is_not_exposed_over_mcp_until_an_admin_says_so(org, org_admin, other_org, client_for):
    agent = AgentFactory(organization=org, name="Purchasing assistant")
    foreign = AgentFactory(organization=other_org, name="Globex helper")
    assert agent.exposed_over_mcp is False
    api = client_for(org_admin)

    shown = api.get(f"/api/v1/orgs/{org.slug}/agents/{agent.pk}/")
    changed = api.patch(
        f"/api/v1/orgs/{org.slug}/agents/{agent.pk}/", {"exposed_over_mcp": True}, format="json"
    )
    refused = api.patch(
        f"/api/v1/orgs/{org.slug}/agents/{foreign.pk}/", {"exposed_over_mcp": True}, format="json"
    )

    assert shown.json()["exposed_over_mcp"] is False
    assert changed.status_code == 200 and changed.json()["exposed_over_mcp"] is True
    assert Agent.objects.unscoped().get(pk=agent.pk).exposed_over_mcp is True
    assert (
        refused.status_code == 404 and Agent.objects.unscoped().get(pk=foreign.pk).exposed_over_mcp is False
    )


def test_the_agent_admin_shows_the_mcp_exposure_field(org, org_admin, client):
    agent = AgentFactory(organization=org, name="Purchasing assistant")
    client.force_login(org_admin)
    page = client.get(f"/admin/agents/agent/{agent.pk}/change/")
    assert page.status_code == 200
    assert 'name="exposed_over_mcp"' in page.content.decode()
