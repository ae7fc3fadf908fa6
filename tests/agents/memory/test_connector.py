"""The organisation's memory connector comes with the first agent whose memory is switched on, in the
API as in the admin; the connectors' form and API neither make one nor give it to an agent."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents.memory.connector import memory_connector
from agents.models import Agent
from connectors.models import Connector, ConnectorKind
from tests.agents.admin_form import agent_admin_form
from tests.agents.factories import AgentFactory
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db


def memory_connectors(org) -> list[Connector]:
    return list(Connector.objects.for_org(org).filter(kind=ConnectorKind.MEMORY))


def test_switching_memory_on_over_the_api_makes_the_connector_once(client_for, org, org_admin, other_org):
    first, second = AgentFactory(organization=org), AgentFactory(organization=org)
    client = client_for(org_admin)

    on = client.patch(f"/api/v1/orgs/{org.slug}/agents/{first.pk}/", {"memory": True}, format="json")
    client.patch(f"/api/v1/orgs/{org.slug}/agents/{second.pk}/", {"memory": True}, format="json")

    assert on.status_code == 200 and on.json()["memory"] is True
    (connector,) = memory_connectors(org)
    assert connector.name == "memory" and [a.name for a in connector.actions.all()] == ["remember"]
    assert memory_connectors(other_org) == []


def test_an_agent_made_without_memory_makes_no_connector(client_for, org, org_admin):
    made = client_for(org_admin).post(f"/api/v1/orgs/{org.slug}/agents/", {"name": "Plain"}, format="json")

    assert made.status_code == 201 and made.json()["memory"] is False
    assert memory_connectors(org) == []


def test_switching_memory_on_in_the_admin_makes_the_connector(client, org, org_admin):
    assert client.login(username=org_admin.username, password=PASSWORD)

    response = client.post(reverse("admin:agents_agent_add"), agent_admin_form(org, memory="on"), follow=True)

    assert response.status_code == 200
    assert Agent.objects.for_org(org).get(name="Buyer").memory is True
    assert len(memory_connectors(org)) == 1


def test_the_connectors_api_neither_makes_a_memory_connector_nor_gives_it_to_an_agent(
    client_for, org, org_admin
):
    connector = memory_connector(organization=org, actor=None)
    agent = AgentFactory(organization=org)
    client = client_for(org_admin)

    made = client.post(
        f"/api/v1/orgs/{org.slug}/connectors/", {"name": "m2", "kind": "memory"}, format="json"
    )
    given = client.patch(
        f"/api/v1/orgs/{org.slug}/agents/{agent.pk}/", {"connectors": [str(connector.pk)]}, format="json"
    )
    unmade = client.patch(
        f"/api/v1/orgs/{org.slug}/connectors/{connector.pk}/", {"kind": "http"}, format="json"
    )

    assert made.status_code == 400 and "first agent whose memory" in str(made.json()["kind"])
    assert given.status_code == 400 and not agent.connectors.exists()
    assert unmade.status_code == 400
    connector.refresh_from_db()
    assert connector.kind == ConnectorKind.MEMORY
