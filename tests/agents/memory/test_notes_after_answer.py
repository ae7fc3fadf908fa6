"""An agent with memory and "note memories after each answer" on asks its model once, after a run has
answered, which lasting facts of the person the exchange holds, and keeps them as that person's: the
call is accounted to the person and agent (a usage row of purpose "memory", admitted by their budgets),
the answer decoded strictly; with the switch off, without an answer or with a spent budget nothing is
asked; the run manager queues it once a run's end is recorded."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async

from agents.memory.models import Memory, MemoryOrigin
from agents.memory.services import memory_create
from agents.models import Run
from agents.runs.memory_notes import NotesFailed, NotesSkipped, NotesTaken, memory_notes_take
from agents.usage.models import UsageRecord
from platform_core.models import Role
from tests.agents.factories import (
    AgentFactory,
    BudgetFactory,
    ConversationFactory,
    MessageFactory,
    ModelConfigFactory,
    RunFactory,
)
from tests.agents.ws_helpers import ask_until_done
from tests.factories import OrganizationFactory, member_of
from tests.fakes.openai_server import text

pytestmark = pytest.mark.django_db

QUESTION = "I run the Hangzhou warehouse; which orders ship today? Keep it short please."


def answered_run(base_url: str, *, extraction: bool = True, memory: bool = True, status: str = "done"):
    org = OrganizationFactory()
    ModelConfigFactory(organization=org, base_url=base_url, is_default=True)
    agent = AgentFactory(organization=org, memory=memory, memory_extraction=extraction)
    person = member_of(org, Role.MEMBER)
    conversation = ConversationFactory(organization=org, agent=agent, user=person)
    run = RunFactory(conversation=conversation, user=person, status=status, answer="Orders 17 and 18.")
    MessageFactory(conversation=conversation, content=QUESTION, run=run)
    return org, agent, person, run


def notes(*texts: str) -> str:
    return json.dumps({"memories": list(texts)}, ensure_ascii=False)


def test_the_model_is_asked_once_and_its_notes_become_the_persons_memories(scripted_llm):
    org, agent, person, run = answered_run(scripted_llm.base_url)
    memory_create(organization_id=org.pk, user_id=person.pk, text="Prefers short answers.")
    scripted_llm.script(text(notes("Runs the Hangzhou warehouse.", "Prefers short answers.")))

    outcome = memory_notes_take(run.pk)

    assert outcome == NotesTaken(kept=("Runs the Hangzhou warehouse.",))
    (request,) = scripted_llm.requests
    asked = request["messages"][1]["content"]
    assert "- Prefers short answers." in asked and QUESTION in asked and "Orders 17 and 18." in asked
    noted = Memory.objects.for_org(org).get(text="Runs the Hangzhou warehouse.")
    assert (noted.user_id, noted.origin, noted.agent_id) == (person.pk, MemoryOrigin.EXTRACTED, agent.pk)
    usage = UsageRecord.objects.get(organization=org, purpose="memory")
    assert (usage.user_id, usage.agent_id, usage.run_id) == (person.pk, agent.pk, run.pk)
    assert usage.completion_tokens > 0 and usage.total_tokens > usage.completion_tokens


def test_an_answer_that_is_not_the_json_asked_for_keeps_nothing(scripted_llm):
    org, _agent, _person, run = answered_run(scripted_llm.base_url)
    scripted_llm.script(text('{"memories": "Runs the warehouse.", "extra": 1}'))

    assert isinstance(memory_notes_take(run.pk), NotesFailed)
    assert not Memory.objects.for_org(org).exists()


def test_too_many_notes_are_refused_whole(scripted_llm):
    org, _agent, _person, run = answered_run(scripted_llm.base_url)
    scripted_llm.script(text(notes("One.", "Two.", "Three.", "Four.")))

    assert isinstance(memory_notes_take(run.pk), NotesFailed)
    assert not Memory.objects.for_org(org).exists()


@pytest.mark.parametrize(
    "setup",
    [{"extraction": False}, {"memory": False}, {"status": "failed"}],
    ids=["off", "no memory", "no answer"],
)
def test_nothing_is_asked_when_the_switch_is_off_or_the_run_did_not_answer(scripted_llm, setup):
    _org, _agent, _person, run = answered_run(scripted_llm.base_url, **setup)

    assert isinstance(memory_notes_take(run.pk), NotesSkipped)
    assert scripted_llm.requests == []


def test_a_spent_budget_of_the_agent_asks_nothing(scripted_llm):
    org, agent, _person, run = answered_run(scripted_llm.base_url)
    BudgetFactory(organization=org, agent=agent, limit=0)  # spent: nothing more is admitted

    outcome = memory_notes_take(run.pk)

    assert isinstance(outcome, NotesSkipped) and "spent" in outcome.reason
    assert scripted_llm.requests == []


@pytest.mark.django_db(transaction=True)
async def test_the_run_manager_queues_the_notes_once_a_run_has_answered(scripted_llm, monkeypatch):
    queued: list[str] = []
    monkeypatch.setattr("agents.runs.note_tasks.note_memories.delay", queued.append)

    def given():
        org = OrganizationFactory()
        ModelConfigFactory(organization=org, base_url=scripted_llm.base_url, is_default=True)
        person = member_of(org, Role.MEMBER)
        noting = AgentFactory(organization=org, memory=True, memory_extraction=True, completion_check=False)
        silent = AgentFactory(organization=org, memory=True, completion_check=False)
        return (
            person,
            ConversationFactory(organization=org, agent=noting, user=person),
            ConversationFactory(organization=org, agent=silent, user=person),
        )

    person, noting, silent = await database_sync_to_async(given)()
    scripted_llm.script(text("Orders 17 and 18."), text("Orders 17 and 18."))

    await ask_until_done(noting.pk, person, QUESTION)
    await ask_until_done(silent.pk, person, QUESTION)

    run = await Run.objects.unscoped().aget(conversation=noting)
    assert queued == [str(run.pk)]
