"""The demo organisation's Purchasing assistant has memory on: the offline demo model keeps what the
person asks it to remember with ``memory__remember`` (in English and in Chinese), tells them where to
see it, and answers "what do you remember about me?" from the memories its next run is given; no other
question makes it remember anything."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth import get_user_model

from agents import runtime
from agents.demo import DEMO_AGENT_NAME
from agents.demo_model import DemoLLM
from agents.memory.models import Memory
from agents.models import Agent
from platform_core.demo import DEMO_ADMIN, demo_seed
from tests.agents.blueprint_runs import blueprint_of, react_over

TOOL = "memory__remember"


def _run(question: str) -> runtime.RunBlueprint:
    org = demo_seed(admin_password="demo-pass-1234").organization
    agent = Agent.objects.for_org(org).get(name=DEMO_AGENT_NAME)
    return blueprint_of(org, agent, get_user_model().objects.get(username=DEMO_ADMIN), question)


async def _asked(question: str) -> tuple[str, list[str]]:
    blueprint = await database_sync_to_async(_run)(question)
    agent, result = await react_over(blueprint, DemoLLM(stream_delay=0))
    answered = await agent.answer(result)
    return answered.text, [call.name for call in result.tool_calls]


def _memories() -> list[str]:
    return list(Memory.objects.unscoped().order_by("created_at").values_list("text", flat=True))


@pytest.mark.django_db(transaction=True)
async def test_the_demo_keeps_what_it_is_asked_to_remember_and_says_it_back():
    answer, called = await _asked("Remember that I work in the Shanghai finance team.")

    assert called == [TOOL] and "I will remember that" in answer
    assert await database_sync_to_async(_memories)() == ["I work in the Shanghai finance team"]

    recalled, called_again = await _asked("What do you remember about me?")

    assert called_again == [] and "- I work in the Shanghai finance team" in recalled


@pytest.mark.django_db(transaction=True)
async def test_the_demo_remembers_in_chinese():
    answer, called = await _asked("请记住我负责华东区的采购。")

    assert called == [TOOL] and "我记住了" in answer
    assert await database_sync_to_async(_memories)() == ["我负责华东区的采购"]


@pytest.mark.django_db(transaction=True)
async def test_no_other_question_makes_the_demo_remember_anything():
    _answer, called = await _asked("Which purchase orders are still open? I like short answers.")

    assert TOOL not in called
    assert await database_sync_to_async(_memories)() == []
