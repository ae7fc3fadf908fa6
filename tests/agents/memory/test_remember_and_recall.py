"""A run of an agent with memory on gets the person's memories in its system prompt and the
``memory__remember`` tool, a connector's tool behind the same guard rails as every other: what the model
keeps in one conversation reaches the prompt of the person's next one, never another person's nor another
organisation's; a deleted memory never reaches a model again; the call log records the call and the audit
log the write, neither with the text."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async

from agents import runtime
from agents.memory.connector import memory_connector
from agents.memory.models import Memory, MemoryOrigin
from agents.memory.services import memory_create, memory_delete
from connectors.models import CallStatus, ConnectorCallLog, ConnectorKind
from platform_core.models import AuditLog, Membership, Role
from platform_core.services import organization_set_read_only
from tests.agents.blueprint_runs import blueprint_of, react_over
from tests.agents.factories import AgentFactory, ModelConfigFactory
from tests.factories import MembershipFactory, OrganizationFactory, member_of
from tests.fakes.openai_server import call, text, tool_calls

TOOL = "memory__remember"
FACT = "Works in the Shanghai finance team and wants amounts in CNY."


def agent_of(org, llm_base_url: str = "http://127.0.0.1:9/v1", *, memory: bool = True):
    ModelConfigFactory(organization=org, base_url=llm_base_url, is_default=True)
    agent = AgentFactory(
        organization=org, name="Finance assistant", instructions="Help with expenses.", memory=memory
    )
    memory_connector(organization=org, actor=None)
    return agent


def run_of(org, agent, user, question: str) -> runtime.RunBlueprint:
    return blueprint_of(org, agent, user, question)


async def run_react(blueprint: runtime.RunBlueprint, make_llm) -> Any:
    _agent, result = await react_over(blueprint, make_llm())
    return result


def tool_names(request: dict) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools", [])]


@pytest.mark.django_db(transaction=True)
async def test_what_the_model_remembers_reaches_the_persons_next_conversation_only(scripted_llm, make_llm):
    def world():
        org = OrganizationFactory()
        agent = agent_of(org, scripted_llm.base_url)
        alice, bob = member_of(org, Role.MEMBER), member_of(org, Role.MEMBER)
        return org, agent, alice, bob, run_of(org, agent, alice, "Remember: I work in Shanghai finance.")

    org, agent, alice, bob, first = await database_sync_to_async(world)()
    scripted_llm.script(tool_calls(call(TOOL, {"text": FACT})), text("I will remember that."))

    result = await run_react(first, make_llm)

    assert result.answer == "I will remember that."
    assert TOOL in tool_names(scripted_llm.requests[0])
    assert f"`{TOOL}`" in scripted_llm.requests[0]["messages"][0]["content"]
    received = next(m["content"] for m in scripted_llm.requests[1]["messages"] if m["role"] == "tool")
    assert received == "Remembered."
    (kept,) = await database_sync_to_async(lambda: list(Memory.objects.for_org(org)))()
    assert (kept.user_id, kept.text, kept.origin) == (alice.pk, FACT, MemoryOrigin.AGENT)
    assert kept.agent_id == agent.pk and str(kept.conversation_id) == first.context.conversation_id

    later = await database_sync_to_async(run_of)(org, agent, alice, "Which currency do I want?")
    others = await database_sync_to_async(run_of)(org, agent, bob, "Which currency do I want?")

    assert FACT in later.system_prompt
    assert "## What you remember about this person" in later.system_prompt
    assert FACT not in others.system_prompt and "## What you remember" not in others.system_prompt

    def records():
        log = ConnectorCallLog.objects.for_org(org).select_related("connector").get(tool_name=TOOL)
        audit = AuditLog.objects.get(organization=org, action="memory.created")
        return log, audit

    log, audit = await database_sync_to_async(records)()
    assert log.status == CallStatus.OK and log.connector.kind == ConnectorKind.MEMORY
    assert log.retrieved == [{"memory": str(kept.pk), "created": True}]
    assert log.arguments == {"text": f"({len(FACT)} characters, not kept)"}
    assert FACT not in str(audit.after) and FACT not in audit.target_repr
    assert audit.after["length"] == len(FACT)


@pytest.mark.django_db
def test_another_organisations_memories_never_reach_a_run():
    org, other = OrganizationFactory(), OrganizationFactory()
    person = member_of(org, Role.MEMBER)
    MembershipFactory(organization=other, user=person, role=Role.MEMBER)
    memory_create(organization_id=other.pk, user_id=person.pk, text="Secret of the other organisation.")
    memory_create(organization_id=org.pk, user_id=person.pk, text="Prefers short answers.")

    blueprint = run_of(org, agent_of(org), person, "Hello")

    assert "Prefers short answers." in blueprint.system_prompt
    assert "Secret of the other organisation." not in blueprint.system_prompt


@pytest.mark.django_db
def test_a_deleted_memory_never_reaches_a_model_again():
    org = OrganizationFactory()
    person = member_of(org, Role.MEMBER)
    agent = agent_of(org)
    saved = memory_create(organization_id=org.pk, user_id=person.pk, text="Lives in Hangzhou.")
    assert "Lives in Hangzhou." in run_of(org, agent, person, "Where do I live?").system_prompt

    memory_delete(memory=saved.memory, actor=person)

    assert "Lives in Hangzhou." not in run_of(org, agent, person, "Where do I live?").system_prompt
    audit = AuditLog.objects.get(organization=org, action="memory.deleted")
    assert "Hangzhou" not in str(audit.before) and audit.before["reason"] == "person"


@pytest.mark.django_db
def test_an_agent_with_memory_off_neither_recalls_nor_remembers():
    org = OrganizationFactory()
    person = member_of(org, Role.MEMBER)
    agent = agent_of(org, memory=False)
    memory_create(organization_id=org.pk, user_id=person.pk, text="Prefers short answers.")

    blueprint = run_of(org, agent, person, "Hello")

    assert "Prefers short answers." not in blueprint.system_prompt
    assert TOOL not in runtime.tools_for(blueprint).names()


@pytest.mark.django_db
def test_a_switched_off_memory_connector_gives_no_tool_but_memories_are_still_recalled():
    org = OrganizationFactory()
    person = member_of(org, Role.MEMBER)
    agent = agent_of(org)
    memory_create(organization_id=org.pk, user_id=person.pk, text="Prefers short answers.")
    connector = memory_connector(organization=org, actor=None)
    connector.is_active = False
    connector.save()

    blueprint = run_of(org, agent, person, "Hello")

    assert "Prefers short answers." in blueprint.system_prompt
    assert TOOL not in runtime.tools_for(blueprint).names() and TOOL not in blueprint.system_prompt


@pytest.mark.django_db
def test_a_person_who_left_the_organisation_is_given_no_memories():
    org = OrganizationFactory()
    person = member_of(org, Role.MEMBER)
    agent = agent_of(org)
    memory_create(organization_id=org.pk, user_id=person.pk, text="Prefers short answers.")
    Membership.objects.filter(organization=org, user=person).delete()

    assert "Prefers short answers." not in run_of(org, agent, person, "Hello").system_prompt


@pytest.mark.django_db(transaction=True)
async def test_read_only_mode_lets_the_person_keep_a_memory(scripted_llm, make_llm):
    def world():
        org = OrganizationFactory()
        agent = agent_of(org, scripted_llm.base_url)
        person = member_of(org, Role.MEMBER)
        organization_set_read_only(organization=org, actor=None, enabled=True, reason="audit")
        return org, run_of(org, agent, person, "Remember I like tables.")

    org, blueprint = await database_sync_to_async(world)()
    scripted_llm.script(tool_calls(call(TOOL, {"text": "Likes answers as tables."})), text("Noted."))

    await run_react(blueprint, make_llm)

    assert await database_sync_to_async(Memory.objects.for_org(org).count)() == 1
