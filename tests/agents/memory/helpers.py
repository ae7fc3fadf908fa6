"""Memories made through the service, as a run's ``remember`` tool, the notes after an answer or the person
write them."""

from __future__ import annotations

from agents.memory.models import Memory, MemoryOrigin
from agents.memory.services import MemorySaved, memory_create
from tests.agents.factories import AgentFactory, ConversationFactory


def kept(org, user, text: str, *, by_agent: str = "", origin: str = MemoryOrigin.AGENT) -> Memory:
    """``text`` kept for ``user`` in ``org``: by the agent named ``by_agent`` in a conversation of theirs (with
    ``origin``: its tool, or the notes after an answer), or written by the person."""
    if by_agent:
        agent = AgentFactory(organization=org, name=by_agent)
        conversation = ConversationFactory(organization=org, user=user, agent=agent)
        saved = memory_create(
            organization_id=org.pk,
            user_id=user.pk,
            text=text,
            origin=origin,
            agent_id=agent.pk,
            conversation_id=conversation.pk,
        )
    else:
        saved = memory_create(organization_id=org.pk, user_id=user.pk, text=text, actor=user)
    assert isinstance(saved, MemorySaved) and saved.created, saved
    return saved.memory
