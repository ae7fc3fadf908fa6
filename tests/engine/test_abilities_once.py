"""The tool loop resolves what it may send once per run, and again whenever that changed mid-run: a refusal
recorded by another call of the same LLM, or an LLM whose abilities are now another endpoint's."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agents.engine.abilities import JSON_MODE, PARALLEL_TOOL_CALLS, RunAbilities, refuse
from agents.engine.llm import ChatResponse, Message, OpenAICompatibleLLM
from agents.engine.react import ReActAgent
from agents.engine.tools import FunctionTool, ToolRegistry
from tests.fakes.openai_server import call, text, tool_calls

TOOL_STEP = (
    '{"reasoning": "look", "action": {"type": "tool_call", "tool_name": "search", "tool_args": {"q": "a"}}}'
)
FINAL = '{"reasoning": "done", "action": {"type": "final_answer", "answer": "done"}}'


def searching(during: Callable[[], None]) -> ToolRegistry:
    """A ``search`` tool that does ``during()`` while it runs (between two model calls of the run)."""

    async def search(q: str) -> str:
        during()
        return f"results for {q}"

    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    return ToolRegistry([FunctionTool("search", "Search.", search, parameters=schema)])


class SwitchingLLM:
    """An LLM whose ``abilities`` become another endpoint's when :meth:`switch` is called (as a chain of
    endpoints answering from its next one would)."""

    def __init__(self, llm: OpenAICompatibleLLM) -> None:
        self.wrapped_llm = llm
        self.abilities: Mapping[str, bool] = llm.abilities
        self.context_window = llm.context_window

    def switch(self, **abilities: bool) -> None:
        self.abilities = {**self.abilities, **abilities}

    async def chat(self, messages: Sequence[Message], **kwargs: Any) -> ChatResponse:
        return await self.wrapped_llm.chat(messages, **kwargs)

    def stream_chat(self, messages: Sequence[Message], **kwargs: Any) -> Any:
        return self.wrapped_llm.stream_chat(messages, **kwargs)


async def test_a_refusal_recorded_by_another_call_during_the_run_takes_effect_at_the_next_model_call(
    scripted_llm, endpoint
):
    scripted_llm.script(tool_calls(call("search", {"q": "a"})), text("done"))
    llm = endpoint(parallel_tool_calls=False)
    tools = searching(lambda: refuse(llm, PARALLEL_TOOL_CALLS))
    result = await ReActAgent(llm, tools).run("a")
    assert result.answer == "done"
    assert [r.get("parallel_tool_calls") for r in scripted_llm.requests] == [False, None]


async def test_json_mode_refused_elsewhere_during_a_json_mode_run_is_not_asked_for_again(
    scripted_llm, endpoint
):
    scripted_llm.script(text(TOOL_STEP), text(FINAL))
    llm = endpoint(tool_call=False)
    result = await ReActAgent(llm, searching(lambda: refuse(llm, JSON_MODE))).run("find a")
    assert result.answer == "done"
    assert ["response_format" in r for r in scripted_llm.requests] == [True, False]


async def test_an_llm_whose_abilities_are_another_endpoints_mid_run_is_asked_with_the_new_ones(
    scripted_llm, endpoint
):
    scripted_llm.script(
        tool_calls(call("search", {"q": "a"})), tool_calls(call("search", {"q": "b"})), text("ok")
    )
    llm = SwitchingLLM(endpoint())
    result = await ReActAgent(llm, searching(lambda: llm.switch(parallel_tool_calls=False))).run("a")
    assert result.answer == "ok"
    assert [r.get("parallel_tool_calls") for r in scripted_llm.requests] == [None, False, False]


def test_run_abilities_answer_as_the_functions_do_before_and_after_a_refusal():
    class Bare:
        abilities = {"tool_call": True, "parallel_tool_calls": False}

    llm = Bare()
    view = RunAbilities(llm)
    assert view.has(JSON_MODE) and view.declared("tool_call") and not view.declared(PARALLEL_TOOL_CALLS)
    assert view.tool_request_options() == {"parallel_tool_calls": False}
    refuse(llm, JSON_MODE)
    refuse(llm, PARALLEL_TOOL_CALLS)
    assert not view.has(JSON_MODE) and view.declared(JSON_MODE)
    assert view.tool_request_options() == {}
