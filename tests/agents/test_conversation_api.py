"""The sidebar's conversation API: rename, delete and search, each scoped to the user and organisation."""

from __future__ import annotations

import pytest

from agents.models import Conversation, Message, RunStatus
from tests.agents.factories import AgentFactory, ConversationFactory, MessageFactory, RunFactory
from tests.factories import MembershipFactory, member_of

pytestmark = pytest.mark.django_db


def url(org, conversation=None):
    suffix = f"{conversation.pk}/" if conversation is not None else ""
    return f"/api/v1/orgs/{org.slug}/conversations/{suffix}"


def test_a_user_renames_a_conversation_and_only_its_title_changes(client_for, member, org):
    conversation = ConversationFactory(organization=org, user=member, title="Old")
    other_agent = AgentFactory(organization=org)
    before = Conversation.objects.unscoped().get(pk=conversation.pk).updated_at

    response = client_for(member).patch(
        url(org, conversation), {"title": "  Q3 tea   order ", "agent": str(other_agent.pk)}, format="json"
    )

    assert response.status_code == 200, response.content
    assert response.json()["title"] == "Q3 tea order"
    conversation.refresh_from_db()
    assert conversation.title == "Q3 tea order"
    assert conversation.agent_id != other_agent.pk
    assert conversation.updated_at == before  # a rename does not move it to the top


@pytest.mark.parametrize("title", ["", "   ", "x" * 201])
def test_a_blank_or_too_long_title_is_refused_and_the_old_one_kept(client_for, member, org, title):
    conversation = ConversationFactory(organization=org, user=member, title="Old")
    response = client_for(member).patch(url(org, conversation), {"title": title}, format="json")
    assert response.status_code == 400
    assert "title" in response.json()
    conversation.refresh_from_db()
    assert conversation.title == "Old"


def test_a_user_deletes_a_conversation_with_its_messages(client_for, member, org):
    conversation = ConversationFactory(organization=org, user=member)
    run = RunFactory(conversation=conversation, status=RunStatus.DONE)
    MessageFactory(conversation=conversation, run=run, content="question")

    response = client_for(member).delete(url(org, conversation))

    assert response.status_code == 204
    assert not Conversation.objects.unscoped().filter(pk=conversation.pk).exists()
    assert not Message.objects.filter(conversation_id=conversation.pk).exists()


def test_a_conversation_whose_agent_is_still_answering_is_not_deleted(client_for, member, org):
    conversation = ConversationFactory(organization=org, user=member)
    RunFactory(conversation=conversation, status=RunStatus.RUNNING)

    response = client_for(member).delete(url(org, conversation))

    assert response.status_code == 409
    assert "still answering" in response.json()["detail"]
    assert Conversation.objects.unscoped().filter(pk=conversation.pk).exists()


def test_search_finds_the_users_conversations_by_title_or_agent_in_any_case(client_for, member, org):
    buyer = AgentFactory(organization=org, name="Buyer")
    seller = AgentFactory(organization=org, name="Seller")
    tea = ConversationFactory(organization=org, user=member, agent=seller, title="Tea order for Q3")
    desks = ConversationFactory(organization=org, user=member, agent=buyer, title="Standing desks")
    ConversationFactory(organization=org, user=member, agent=seller, title="Payments")

    def titles(query):
        results = client_for(member).get(url(org), {"search": query}).json()["results"]
        return {c["title"] for c in results}

    assert titles("TEA") == {tea.title}
    assert titles("buyer") == {desks.title}
    assert titles("seller order") == {tea.title}
    assert titles("") == {tea.title, desks.title, "Payments"}
    assert titles("nothing") == set()


@pytest.mark.cross_org("conversation-detail", "conversation-list")
def test_another_users_or_organisations_conversation_cannot_be_renamed_deleted_or_found(
    client_for, member, org, other_org
):
    colleague = member_of(org)
    theirs = ConversationFactory(organization=org, user=colleague, title="Secret tea plan")
    MembershipFactory(organization=other_org, user=member)
    foreign = ConversationFactory(organization=other_org, user=member, title="Secret globex plan")
    client = client_for(member)

    for conversation, slug_org in ((theirs, org), (foreign, org)):
        assert client.patch(url(slug_org, conversation), {"title": "Mine"}, format="json").status_code == 404
        assert client.delete(url(slug_org, conversation)).status_code == 404
    assert client.get(url(org), {"search": "secret"}).json()["results"] == []
    assert Conversation.objects.unscoped().get(pk=theirs.pk).title == "Secret tea plan"
    assert Conversation.objects.unscoped().get(pk=foreign.pk).title == "Secret globex plan"
