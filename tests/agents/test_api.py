from __future__ import annotations

import pytest
from django.db import connection

from agents.models import Conversation, ModelConfig
from platform_core.models import Role
from tests.agents.factories import (
    AgentFactory,
    ConversationFactory,
    MessageFactory,
    ModelConfigFactory,
    RunFactory,
)
from tests.factories import member_of

pytestmark = pytest.mark.django_db


def base(org):
    return f"/api/v1/orgs/{org.slug}"


def test_admin_creates_model_config_and_the_api_key_is_write_only_and_encrypted(client_for, org_admin, org):
    client = client_for(org_admin)
    response = client.post(
        f"{base(org)}/model-configs/",
        {
            "name": "main",
            "base_url": "https://llm.example.com/v1",
            "model": "gpt-x",
            "api_key": "sk-live-secret-123",
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert "api_key" not in body and body["has_api_key"] is True
    config = ModelConfig.objects.unscoped().get(pk=body["id"])
    assert config.api_key == "sk-live-secret-123"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT api_key FROM agents_modelconfig WHERE id = %s",
            [config.pk.hex if connection.vendor == "sqlite" else config.pk],
        )
        raw = cursor.fetchone()[0]
    assert "sk-live-secret-123" not in raw
    listed = client.get(f"{base(org)}/model-configs/").content
    assert b"sk-live-secret-123" not in listed


def test_members_cannot_see_model_configs(client_for, member, org):
    ModelConfigFactory(organization=org)
    assert client_for(member).get(f"{base(org)}/model-configs/").status_code == 403


def test_members_list_active_agents_only_and_cannot_create(client_for, member, org):
    AgentFactory(organization=org, name="Buyer")
    AgentFactory(organization=org, name="Retired", active=False)
    client = client_for(member)
    names = [a["name"] for a in client.get(f"{base(org)}/agents/").json()["results"]]
    assert names == ["Buyer"]
    assert client.post(f"{base(org)}/agents/", {"name": "Mine"}, format="json").status_code == 403


def test_agent_cannot_use_another_orgs_model_config(client_for, org_admin, org, other_org):
    foreign = ModelConfigFactory(organization=other_org)
    response = client_for(org_admin).post(
        f"{base(org)}/agents/", {"name": "Sneaky", "model_config": str(foreign.pk)}, format="json"
    )
    assert response.status_code == 400 and "model_config" in response.json()


def test_user_starts_a_conversation_with_an_agent(client_for, member, org):
    agent = AgentFactory(organization=org)
    response = client_for(member).post(f"{base(org)}/conversations/", {"agent": str(agent.pk)}, format="json")
    assert response.status_code == 201, response.content
    conversation = Conversation.objects.unscoped().get(pk=response.json()["id"])
    assert conversation.user == member and conversation.organization == org


def test_messages_and_events_replay_in_order(client_for, member, org):
    conversation = ConversationFactory(organization=org, user=member)
    run = RunFactory(conversation=conversation)
    MessageFactory(conversation=conversation, run=run, content="question")
    MessageFactory(conversation=conversation, run=run, role="assistant", content="answer")
    for seq in range(1, 6):
        run.events.create(conversation=conversation, seq=seq, event="step", data={"n": seq})
    client = client_for(member)
    messages = client.get(f"{base(org)}/conversations/{conversation.pk}/messages/").json()["results"]
    assert [(m["role"], m["content"], m["run_id"]) for m in messages] == [
        ("user", "question", str(run.pk)),
        ("assistant", "answer", str(run.pk)),
    ]
    events = client.get(f"{base(org)}/conversations/{conversation.pk}/events/?after_seq=2").json()["results"]
    assert [e["seq"] for e in events] == [3, 4, 5]
    assert events[0] == {"seq": 3, "run_id": str(run.pk), "event": "step", "data": {"n": 3}}
    bad = client.get(f"{base(org)}/conversations/{conversation.pk}/events/?after_seq=x")
    assert bad.status_code == 400


def test_conversation_list_has_a_fixed_query_count(client_for, member, org, django_assert_max_num_queries):
    for _ in range(15):
        ConversationFactory(organization=org, user=member)
    client = client_for(member)
    with django_assert_max_num_queries(8):
        body = client.get(f"{base(org)}/conversations/").json()
    assert body["count"] == 15


@pytest.mark.cross_org("model-config-list", "model-config-detail")
def test_model_configs_of_another_org_are_hidden(client_for, org_admin, org, other_org):
    own, foreign = ModelConfigFactory(organization=org), ModelConfigFactory(organization=other_org)
    client = client_for(org_admin)
    listed = {c["id"] for c in client.get(f"{base(org)}/model-configs/").json()["results"]}
    assert listed == {str(own.pk)}
    assert client.get(f"{base(org)}/model-configs/{foreign.pk}/").status_code == 404
    assert (
        client.patch(f"{base(org)}/model-configs/{foreign.pk}/", {"name": "x"}, format="json").status_code
        == 404
    )
    assert client.delete(f"{base(org)}/model-configs/{foreign.pk}/").status_code == 404
    foreign.refresh_from_db()
    assert foreign.name != "x"


@pytest.mark.cross_org("agent-list", "agent-detail")
def test_agents_of_another_org_are_hidden(client_for, org_admin, org, other_org):
    own, foreign = AgentFactory(organization=org), AgentFactory(organization=other_org)
    client = client_for(org_admin)
    listed = {a["id"] for a in client.get(f"{base(org)}/agents/").json()["results"]}
    assert listed == {str(own.pk)}
    assert client.get(f"{base(org)}/agents/{foreign.pk}/").status_code == 404
    assert client.delete(f"{base(org)}/agents/{foreign.pk}/").status_code == 404
    assert type(foreign).objects.unscoped().filter(pk=foreign.pk).exists()


@pytest.mark.cross_org(
    "conversation-list", "conversation-detail", "conversation-messages", "conversation-events"
)
def test_conversations_of_another_org_or_user_are_hidden(client_for, member, org, other_org):
    mine = ConversationFactory(organization=org, user=member)
    colleague = member_of(org, Role.MEMBER, username="colleague")
    theirs = ConversationFactory(organization=org, user=colleague)
    foreign = ConversationFactory(organization=other_org)
    foreign_agent = AgentFactory(organization=other_org)
    client = client_for(member)
    listed = {c["id"] for c in client.get(f"{base(org)}/conversations/").json()["results"]}
    assert listed == {str(mine.pk)}
    for other in (theirs, foreign):
        assert client.get(f"{base(org)}/conversations/{other.pk}/").status_code == 404
        assert client.get(f"{base(org)}/conversations/{other.pk}/messages/").status_code == 404
        assert client.get(f"{base(org)}/conversations/{other.pk}/events/").status_code == 404
        assert client.delete(f"{base(org)}/conversations/{other.pk}/").status_code == 404
    created = client.post(f"{base(org)}/conversations/", {"agent": str(foreign_agent.pk)}, format="json")
    assert created.status_code == 400
    assert Conversation.objects.unscoped().filter(pk__in=[theirs.pk, foreign.pk]).count() == 2
