"""Fixtures shared by the agent tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from platform_core.models import Role
from tests.agents.factories import AgentFactory, ConversationFactory, ModelConfigFactory
from tests.factories import OrganizationFactory, member_of


@pytest.fixture
def chat(db, scripted_llm) -> Callable[[], tuple]:
    """Builds (sync) an org, a member ``mia``, an agent on the scripted LLM and her conversation with it;
    returns ``(user, conversation)``."""

    def build():
        org = OrganizationFactory(slug="acme")
        user = member_of(org, Role.MEMBER, username="mia")
        ModelConfigFactory(organization=org, base_url=scripted_llm.base_url, is_default=True)
        agent = AgentFactory(organization=org, instructions="Be brief.")
        return user, ConversationFactory(organization=org, user=user, agent=agent)

    return build
