"""route_execution_mode: one cheap structured call picks react or plan; any failure means react."""

from __future__ import annotations

import pytest

from agents.engine.llm import Usage
from agents.engine.plan.router import route_execution_mode
from tests.fakes.openai_server import call, error, text, tool_calls


async def test_the_router_picks_plan_mode_when_the_model_says_so(scripted_llm, make_llm):
    scripted_llm.script(tool_calls(call("choose_mode", {"mode": "plan", "reason": "three reports"})))
    usage = Usage()
    mode = await route_execution_mode(make_llm(model="fast-model"), "Compare Q1, Q2 and Q3", usage=usage)
    assert mode == "plan"
    (request,) = scripted_llm.requests
    assert request["model"] == "fast-model"
    assert request["messages"][0]["content"].startswith("Choose how an AI agent")
    assert request["messages"][1] == {"role": "user", "content": "Compare Q1, Q2 and Q3"}
    assert usage.calls == 1


async def test_the_router_picks_react_when_the_model_says_so(scripted_llm, make_llm):
    scripted_llm.script(tool_calls(call("choose_mode", {"mode": "react", "reason": "one look-up"})))
    assert await route_execution_mode(make_llm(), "What is invoice 7?") == "react"


@pytest.mark.parametrize(
    "replies",
    [
        [error(503)] * 5,
        [tool_calls(call("choose_mode", {"mode": "team"}))] + [text("team")] * 4,
    ],
    ids=["model-down", "invalid-mode"],
)
async def test_any_failure_routes_to_react(scripted_llm, make_llm, replies):
    scripted_llm.script(*replies)
    assert await route_execution_mode(make_llm(), "anything") == "react"
