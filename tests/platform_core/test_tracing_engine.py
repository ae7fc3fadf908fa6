"""The engine's spans with an in-memory exporter (no Django): a blocked call's verdict names the hook that
blocked it, a failing tool's span says so, and a failed model call's span carries the error's type."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agents.engine import tracing
from agents.engine.hooks import HookContext, PreToolUseHook
from agents.engine.llm import LLMError
from agents.engine.react import ReActAgent
from agents.engine.tools import ToolRegistry
from agents.engine.verdicts import Block
from tests.engine.doubles import FakeLLM, RecordingTool, say, use

WHO = {"org": "acme", "agent": "a1", "run": "r1"}


class NoRefunds(PreToolUseHook):
    name = "no_refunds"

    async def pre_tool_use(self, ctx: HookContext) -> Block:
        return Block("refunds are not allowed")


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.enable(provider)
    try:
        yield exporter
    finally:
        tracing.disable()
        provider.shutdown()


def named(exporter: InMemorySpanExporter, name: str) -> list[dict]:
    return [dict(s.attributes or {}) for s in exporter.get_finished_spans() if s.name == name]


async def test_a_blocked_call_is_a_block_verdict_naming_the_hook(spans):
    llm = tracing.TracedLLM(FakeLLM(use(("refund", {"q": "order 7"})), say("I cannot refund.")), WHO)
    tools = ToolRegistry([tracing.TracedTool(RecordingTool("refund"), WHO)])
    hooks = tracing.TracedHookRegistry(WHO, [NoRefunds()])

    with tracing.run_span(WHO) as run:
        await ReActAgent(llm, tools, hooks=hooks).run("Refund order 7")
        run.outcome("completed")

    (verdict,) = named(spans, "hook.verdict")
    assert (verdict["tool"], verdict["verdict"], verdict["hook"]) == ("refund", "block", "no_refunds")
    assert named(spans, "tool.call") == []  # a blocked call never ran
    assert named(spans, "agent.run")[0]["outcome"] == "completed"


async def test_a_failing_tool_and_a_failing_model_call_say_how_they_failed(spans):
    failing = tracing.TracedTool(RecordingTool("search", raises=RuntimeError("boom")), WHO)
    llm = tracing.TracedLLM(FakeLLM(use(("search", {"q": "x"})), LLMError("down")), WHO)

    result = await ReActAgent(llm, ToolRegistry([failing])).run("Search x")

    assert result.stop_reason == "llm_error"
    (tool,) = named(spans, "tool.call")
    assert tool["outcome"] == "RuntimeError"
    outcomes = [c["outcome"] for c in named(spans, "model.call")]
    assert outcomes == ["tool_calls", "LLMError"]
