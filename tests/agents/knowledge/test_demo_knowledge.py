"""The first hour: the demo organisation's Purchasing assistant has the demo company's purchasing policy
(English and Chinese) as a knowledge base, and the offline demo model answers policy questions from it
with a citation the chat can link; seeding twice changes nothing."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth import get_user_model

from agents import runtime
from agents.demo import DEMO_AGENT_NAME, DEMO_EXAMPLE_QUESTIONS
from agents.demo_model import DemoLLM
from agents.engine.events import Event
from agents.engine.hooks import HookRegistry
from agents.engine.react import ReActAgent
from agents.knowledge.demo import DEMO_KNOWLEDGE_BASE
from agents.knowledge.models import Document, DocumentStatus, KnowledgeBase
from agents.models import Agent
from connectors.models import ConnectorCallLog
from hooks.registry import guard_rail_hooks
from platform_core.demo import DEMO_ADMIN, demo_seed
from tests.agents.factories import ConversationFactory, RunFactory

POLICY_QUESTION = next(q for q in DEMO_EXAMPLE_QUESTIONS if "policy" in q)


def _seeded():
    org = demo_seed(admin_password="demo-pass-1234").organization
    agent = Agent.objects.for_org(org).get(name=DEMO_AGENT_NAME)
    admin = get_user_model().objects.get(username=DEMO_ADMIN)
    conversation = ConversationFactory(organization=org, agent=agent, user=admin)
    run = RunFactory(conversation=conversation, user=admin, status="done")
    blueprint = runtime.RunBlueprint(
        run_id=run.pk,
        conversation_id=conversation.pk,
        organization_id=org.pk,
        organization_slug=org.slug,
        user_id=admin.pk,
        username=admin.get_username(),
        agent_id=agent.pk,
        agent_name=agent.name,
        instructions=agent.instructions,
        max_iterations=5,
        completion_check=False,
        connector_ids=[str(c.pk) for c in agent.connectors.all()],
        query="",
        history=[],
        endpoint=runtime.ModelEndpoint(base_url=None, api_key="", model="demo"),
    )
    return org, blueprint, runtime.tools_for(blueprint), HookRegistry(guard_rail_hooks(blueprint).hooks)


@pytest.mark.django_db
def test_the_demo_knowledge_base_is_seeded_indexed_and_attached_once():
    org, blueprint, tools, _hooks = _seeded()
    demo_seed(admin_password="demo-pass-1234")  # again: nothing new

    kb = KnowledgeBase.objects.for_org(org).get(connector__name=DEMO_KNOWLEDGE_BASE)
    documents = Document.objects.for_org(org).filter(knowledge_base=kb)
    assert sorted(documents.values_list("name", flat=True)) == ["purchasing-policy.md", "采购政策.md"]
    assert {d.status for d in documents} == {DocumentStatus.READY}
    assert f"{DEMO_KNOWLEDGE_BASE}__search" in tools.names()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (POLICY_QUESTION, "business licence"),
        ("采购政策对新供应商有什么要求？", "营业执照"),
        ("Who approves a payment above 100,000 CNY under the purchasing policy?", "finance director"),
    ],
)
async def test_the_offline_demo_model_answers_policy_questions_from_the_knowledge_base_with_a_citation(
    question, expected
):
    org, blueprint, tools, hooks = await database_sync_to_async(_seeded)()
    events: list[Event] = []

    async def collect(event: Event) -> None:
        events.append(event)

    agent = ReActAgent(DemoLLM(stream_delay=0), tools, hooks=hooks, max_iterations=5, completion_check=False)
    result = await agent.run(question, metadata=blueprint.context.as_metadata(), on_event=collect)

    assert expected in result.answer and "[1]" in result.answer
    done_steps = [
        e.data
        for e in events
        if e.channel == "step" and e.data.get("status") == "done" and "citations" in e.data
    ]
    (citations,) = [step["citations"] for step in done_steps]
    first = citations[0]
    assert first["number"] == 1 and first["url"].endswith(
        f"/knowledge/documents/{first['source_id']}/download/"
    )
    assert expected in first["preview"] or expected in result.answer
    logged = await database_sync_to_async(
        lambda: ConnectorCallLog.objects.for_org(org).get(tool_name=f"{DEMO_KNOWLEDGE_BASE}__search")
    )()
    assert logged.retrieved and logged.retrieved[0]["n"] == 1
