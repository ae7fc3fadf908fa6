"""An organisation key reaches only its own organisation, on every route, even when another organisation's
admin has made its service user a member there (the membership is set up directly in the database, as
a careless admin or an old row would leave it). Personal keys keep reaching every organisation of
their user."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from agents.mcp_endpoint.caller import Caller, CallerRefused, caller_admit
from agents.models import Run
from platform_core.identity.api_keys.keys import api_key_create
from platform_core.models import Membership, Role
from platform_core.selectors import organizations_for_user
from tests.agents.factories import AgentFactory, ConversationFactory
from tests.factories import member_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def stray_key(org, other_org):
    """An acme key (every scope) whose service user globex's admin also made a globex admin."""
    ada = member_of(org, Role.ADMIN, username="ada")
    created = api_key_create(name="ERP sync", scopes=["read", "chat", "admin"], actor=ada, organization=org)
    Membership.objects.create(user=created.key.user, organization=other_org, role=Role.ADMIN)
    AgentFactory(organization=org, name="Acme helper")
    foreign_agent = AgentFactory(organization=other_org, name="Globex helper", exposed_over_mcp=True)
    foreign_conversation = ConversationFactory(
        organization=other_org, agent=foreign_agent, user=created.key.user
    )
    return created, foreign_agent, foreign_conversation


def _api(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


@pytest.mark.parametrize(
    "path",
    [
        "agents/",
        "conversations/",
        "members/",
        "settings/",
        "api-keys/",
        "audit-logs/",
        "approvals/",
        "approval-policies/",
        "connectors/",
    ],
)
def test_an_org_keys_service_user_made_member_elsewhere_never_reaches_that_org_over_rest(
    other_org, stray_key, path
):
    created, _agent, _conversation = stray_key
    assert _api(created.raw).get(f"/api/v1/orgs/{other_org.slug}/{path}").status_code == 404


def test_an_org_key_still_reaches_its_own_organisation(org, stray_key):
    created, _agent, _conversation = stray_key
    assert _api(created.raw).get(f"/api/v1/orgs/{org.slug}/agents/").status_code == 200


def test_the_organisation_list_of_an_org_key_names_its_own_organisation_only(org, stray_key):
    created, _agent, _conversation = stray_key
    listed = _api(created.raw).get("/api/v1/orgs/").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert [row["slug"] for row in rows] == [org.slug]
    assert list(organizations_for_user(user=created.key.user)) == [org]


def test_an_org_key_cannot_write_in_the_other_organisation(other_org, stray_key):
    created, agent, conversation = stray_key
    client = _api(created.raw)
    base = f"/api/v1/orgs/{other_org.slug}"
    assert client.post(f"{base}/conversations/", {"agent": str(agent.pk)}, format="json").status_code == 404
    assert (
        client.post(
            f"{base}/conversations/{conversation.pk}/messages/", {"content": "hi"}, format="json"
        ).status_code
        == 404
    )
    assert client.patch(f"{base}/settings/", {"read_only": True}, format="json").status_code == 404
    other_org.refresh_from_db()
    assert not Run.objects.unscoped().exists() and other_org.read_only is False


def test_an_org_key_cannot_chat_with_the_other_organisations_agents_over_http(other_org, stray_key):
    created, agent, _conversation = stray_key
    client = _api(created.raw)
    body = {"model": "Globex helper", "messages": [{"role": "user", "content": "hi"}]}
    route = f"/api/v1/orgs/{other_org.slug}/agents/{agent.pk}/chat/completions"
    assert client.post(route, body, format="json").status_code == 404
    assert (
        client.post(
            "/v1/chat/completions", {**body, "model": "globex/Globex helper"}, format="json"
        ).status_code
        == 404
    )
    models = [m["id"] for m in client.get("/v1/models").json()["data"]]
    assert models == ["acme/Acme helper"]
    assert not Run.objects.unscoped().exists()


def test_an_org_key_is_not_admitted_to_the_other_organisations_mcp_server(org, other_org, stray_key):
    created, _agent, _conversation = stray_key
    refused = caller_admit(raw_key=created.raw, organization_slug=other_org.slug)
    assert isinstance(refused, CallerRefused) and refused.status == 404
    assert isinstance(caller_admit(raw_key=created.raw, organization_slug=org.slug), Caller)


def test_an_org_key_does_not_open_the_other_organisations_chat_pages(org, other_org, stray_key):
    created, _agent, conversation = stray_key
    client = Client(HTTP_AUTHORIZATION=f"Bearer {created.raw}")
    assert client.get(f"/o/{other_org.slug}/chat/").status_code == 404
    assert client.get(f"/o/{other_org.slug}/chat/{conversation.pk}/").status_code == 404
    assert client.get(f"/o/{org.slug}/chat/").status_code == 200


def test_a_personal_key_still_reaches_every_organisation_of_its_user(org, other_org, client_for):
    mia = member_of(org, Role.MEMBER, username="mia")
    Membership.objects.create(user=mia, organization=other_org, role=Role.MEMBER)
    client = client_for(mia)
    assert client.get(f"/api/v1/orgs/{org.slug}/agents/").status_code == 200
    assert client.get(f"/api/v1/orgs/{other_org.slug}/agents/").status_code == 200
