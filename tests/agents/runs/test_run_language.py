"""A run keeps the interface language it was started in: its start records it, and a run loaded again
(resumed after a crash, or by a worker after an approval) hands it to the engine."""

from __future__ import annotations

import pytest

from agents import runtime
from agents.runs import lifecycle
from tests.agents.factories import AgentFactory, ConversationFactory, ModelConfigFactory

pytestmark = pytest.mark.django_db


def test_a_run_loaded_again_carries_the_language_it_was_started_in(org, member):
    ModelConfigFactory(organization=org, is_default=True)
    conversation = ConversationFactory(organization=org, user=member, agent=AgentFactory(organization=org))

    start = lifecycle.run_start(
        conversation=conversation, user=member, content="Where is order 7?", language="zh-hans"
    )

    assert start.run.language == "zh-hans"
    assert runtime.runtime_build(start.run.pk).language == "zh-hans"  # as a resumed run reads it
    assert runtime.runtime_build(start.run.pk, started=start).language == "zh-hans"  # as a new run does


def test_a_run_started_without_a_known_language_leaves_it_to_the_question(org, member):
    ModelConfigFactory(organization=org, is_default=True)
    conversation = ConversationFactory(organization=org, user=member, agent=AgentFactory(organization=org))

    start = lifecycle.run_start(conversation=conversation, user=member, content="订单 7 在哪里？")

    assert runtime.runtime_build(start.run.pk).language == ""
