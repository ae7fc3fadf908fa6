"""Factories of the agents app; every child takes its organisation from its parent."""

from __future__ import annotations

import uuid
from typing import Any

import factory

from agents.models import (
    Agent,
    Attachment,
    Budget,
    Conversation,
    Document,
    KnowledgeBase,
    Message,
    ModelConfig,
    Run,
    Skill,
)
from tests.factories import OrganizationFactory, UserFactory


class ModelConfigFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ModelConfig

    organization = factory.SubFactory(OrganizationFactory)
    name = factory.Sequence(lambda n: f"endpoint-{n}")
    base_url = "http://127.0.0.1:9/v1"
    model = "scripted-model"


class AgentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Agent

    organization = factory.SubFactory(OrganizationFactory)
    name = factory.Sequence(lambda n: f"Agent {n}")
    instructions = "You help with purchasing."


class ConversationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Conversation

    organization = factory.SubFactory(OrganizationFactory)
    user = factory.SubFactory(UserFactory)
    agent = factory.SubFactory(AgentFactory, organization=factory.SelfAttribute("..organization"))
    title = factory.Sequence(lambda n: f"Conversation {n}")


class RunFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Run

    conversation = factory.SubFactory(ConversationFactory)
    organization = factory.SelfAttribute("conversation.organization")
    user = factory.SelfAttribute("conversation.user")
    status = "done"


class MessageFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Message

    conversation = factory.SubFactory(ConversationFactory)
    role = "user"
    content = "hello"


class BudgetFactory(factory.django.DjangoModelFactory):
    """An agent budget (so the admin walks see its organisation-scoped agent choice)."""

    class Meta:
        model = Budget

    organization = factory.SubFactory(OrganizationFactory)
    name = factory.Sequence(lambda n: f"Budget {n}")
    scope = "agent"
    agent = factory.SubFactory(AgentFactory, organization=factory.SelfAttribute("..organization"))
    metric = "tokens"
    period = "month"
    limit = 1000000


AGENTS_TENANT_FACTORIES = {
    ModelConfig: lambda org: ModelConfigFactory(organization=org),
    Agent: lambda org: AgentFactory(organization=org),
    Conversation: lambda org: ConversationFactory(organization=org),
    Run: lambda org: RunFactory(conversation=ConversationFactory(organization=org)),
    Budget: lambda org: BudgetFactory(organization=org),
    KnowledgeBase: lambda org: _knowledge_base(org),
    Document: lambda org: _document(org),
    Attachment: lambda org: _attachment(org),
    Skill: lambda org: _skill(org),
}


def _skill(org: Any) -> Skill:
    from agents.skills.services import skill_create

    return skill_create(
        organization=org,
        name=f"skill-{uuid.uuid4().hex[:8]}",
        description="How a purchase is approved.",
        body="# Steps\n",
        files={"notes.md": "n"},
        actor=None,
    )


def _attachment(org: Any) -> Attachment:
    """A pending upload of a member of ``org``, stored through the service (a real file on the storage)."""
    from django.core.files.base import ContentFile

    from agents.attachments.services import AttachmentStored, attachment_upload
    from tests.factories import member_of

    uploaded = attachment_upload(
        organization=org,
        user=member_of(org),
        name="notes.txt",
        content=ContentFile(b"Meeting notes."),
    )
    assert isinstance(uploaded, AttachmentStored), uploaded
    return uploaded.attachment


def _knowledge_base(org: Any) -> KnowledgeBase:
    from agents.knowledge.services import knowledge_base_create

    return knowledge_base_create(organization=org, name=f"kb-{uuid.uuid4().hex[:8]}", actor=None)


def _document(org: Any) -> Document:
    return Document.objects.create(
        organization=org,
        knowledge_base=_knowledge_base(org),
        name="notes.md",
        sha256="0" * 64,
        status="ready",
    )
