"""The agent admin explains a taken name and a delete that conversations forbid (never a 500)."""

from __future__ import annotations

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.urls import reverse

from agents.models import Agent
from tests.agents.admin_form import agent_admin_form
from tests.agents.factories import AgentFactory, ConversationFactory
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client, org_admin):
    assert client.login(username=org_admin.username, password=PASSWORD)
    return client


def test_adding_an_agent_with_a_taken_name_shows_a_form_error(admin_client, org):
    AgentFactory(organization=org, name="Buyer")
    response = admin_client.post(reverse("admin:agents_agent_add"), agent_admin_form(org, name="Buyer"))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert list(errors) == ["__all__"] and "Name" in str(errors), errors
    assert Agent.objects.unscoped().filter(organization=org, name="Buyer").count() == 1


def test_renaming_an_agent_to_a_taken_name_shows_a_form_error(admin_client, org):
    AgentFactory(organization=org, name="Buyer")
    other = AgentFactory(organization=org, name="Seller")
    response = admin_client.post(
        reverse("admin:agents_agent_change", args=[other.pk]), agent_admin_form(org, name="Buyer")
    )
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert list(errors) == ["__all__"] and "Name" in str(errors), errors
    other.refresh_from_db()
    assert other.name == "Seller"


def test_deleting_an_agent_with_conversations_names_them_and_keeps_it(admin_client, org):
    agent = AgentFactory(organization=org, name="Buyer")
    ConversationFactory(agent=agent, organization=org, title="Invoice question")
    url = reverse("admin:agents_agent_delete", args=[agent.pk])
    page = admin_client.get(url)
    assert page.status_code == 200 and b"Invoice question" in page.content
    response = admin_client.post(url, {"post": "yes"})
    assert response.status_code == 200
    assert Agent.objects.unscoped().filter(pk=agent.pk).exists()


def test_bulk_deleting_agents_with_conversations_keeps_them(admin_client, org):
    agent = AgentFactory(organization=org, name="Buyer")
    ConversationFactory(agent=agent, organization=org)
    response = admin_client.post(
        reverse("admin:agents_agent_changelist"),
        {"action": "delete_selected", ACTION_CHECKBOX_NAME: [str(agent.pk)], "post": "yes"},
    )
    assert response.status_code == 200
    assert Agent.objects.unscoped().filter(pk=agent.pk).exists()
