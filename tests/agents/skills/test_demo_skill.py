"""The demo organisation's Purchasing assistant has the skill "purchase-approval" (the demo company's
purchase approval procedure) and an example question that uses it: the offline demo model, in a run
built as every run is, routes it to the ReAct loop, reads the skill with ``skills__read_skill`` (recorded
in the call log with its version) and answers from its body; the policy question still goes to the
knowledge base; seeding twice changes nothing."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth import get_user_model

from agents import runtime
from agents.demo import DEMO_AGENT_NAME, DEMO_EXAMPLE_QUESTIONS
from agents.demo_model import LABEL_EN, LABEL_ZH, DemoLLM
from agents.engine.llm import Usage
from agents.engine.model_registry import ModelRegistry
from agents.models import Agent, ExecutionMode
from agents.skills.demo import DEMO_SKILL_NAME, DEMO_SKILL_QUESTION
from agents.skills.models import Skill
from agents.skills.selectors import skill_files_current
from connectors.models import ConnectorCallLog
from platform_core.demo import DEMO_ADMIN, demo_seed
from tests.agents.blueprint_runs import blueprint_of, react_over

TOOL = "skills__read_skill"


def _run(question: str) -> tuple[int, runtime.RunBlueprint]:
    org = demo_seed(admin_password="demo-pass-1234").organization
    agent = Agent.objects.for_org(org).get(name=DEMO_AGENT_NAME)
    admin = get_user_model().objects.get(username=DEMO_ADMIN)
    return org.pk, blueprint_of(org, agent, admin, question)


async def _asked(question: str) -> tuple[int, runtime.RunBlueprint, str, list[str]]:
    org_id, blueprint = await database_sync_to_async(_run)(question)
    agent, result = await react_over(blueprint, DemoLLM(stream_delay=0))
    answered = await agent.answer(result)  # the chat's answer, synthesised from the trace as a run's is
    return org_id, blueprint, answered.text, [call.name for call in result.tool_calls]


@pytest.mark.django_db
def test_the_demo_assistant_is_allowed_the_purchase_approval_skill_once():
    _run("hello")
    org = demo_seed(admin_password="demo-pass-1234").organization  # again: nothing new

    skill = Skill.objects.for_org(org).get()
    agent = Agent.objects.for_org(org).get(name=DEMO_AGENT_NAME)
    assert skill.name == DEMO_SKILL_NAME and skill.version == 1
    assert list(agent.skills.all()) == [skill]
    assert list(skill_files_current(skill=skill)) == ["templates/approval-request.md"]
    assert DEMO_SKILL_QUESTION in agent.example_questions
    assert DEMO_EXAMPLE_QUESTIONS[-1] == DEMO_SKILL_QUESTION


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("question", "expected", "label"),
    [
        (DEMO_SKILL_QUESTION, "above 10,000 CNY: an approver, an admin or the owner", LABEL_EN),
        ("采购审批的流程是什么？", "above 100,000 CNY: the finance director", LABEL_ZH),
    ],
)
async def test_the_offline_demo_model_reads_the_skill_and_answers_from_it(question, expected, label):
    org_id, blueprint, answer, called = await _asked(question)

    assert called == [TOOL]
    assert "## Skills" in blueprint.system_prompt and f"- {DEMO_SKILL_NAME}: " in blueprint.system_prompt
    assert answer.startswith(f"**{label}**")
    assert expected in answer and "purchase-approval" in answer
    logged = await database_sync_to_async(
        lambda: ConnectorCallLog.objects.for_org(org_id).get(tool_name=TOOL)
    )()
    assert logged.retrieved == [{"skill": DEMO_SKILL_NAME, "version": 1, "file": ""}]


@pytest.mark.django_db(transaction=True)
async def test_the_policy_question_still_searches_the_knowledge_base():
    policy = next(q for q in DEMO_EXAMPLE_QUESTIONS if "policy" in q)

    _, _, answer, called = await _asked(policy)

    assert called == ["purchasing_policy__search"] and "[1]" in answer


@pytest.mark.django_db(transaction=True)
async def test_the_skill_question_runs_the_react_loop_in_the_demo_agents_automatic_mode():
    _, blueprint = await database_sync_to_async(_run)(DEMO_SKILL_QUESTION)
    registry = ModelRegistry({"general": DemoLLM(stream_delay=0), "fast": DemoLLM(stream_delay=0)})

    mode = await runtime.execution_mode_for(blueprint, registry, usage=Usage())

    assert blueprint.execution_mode == ExecutionMode.AUTO and mode == ExecutionMode.REACT
