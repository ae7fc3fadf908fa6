"""The engine's metering (no Django): every call asked first and reported after, with its purpose, through
the real openai SDK against the scripted server."""

from __future__ import annotations

import pytest

from agents.engine.completion import Usage
from agents.engine.llm import LLMError, OpenAICompatibleLLM
from agents.engine.metering import (
    BudgetExceededError,
    BudgetRefusal,
    CallPurpose,
    MeteredLLM,
    ModelCall,
    ModelCallUsage,
    Proceed,
    call_purpose,
    prompt_bound,
)
from tests.fakes.openai_server import error, text

REPORTED = {
    "prompt_tokens": 30,
    "completion_tokens": 5,
    "total_tokens": 35,
    "prompt_tokens_details": {"cached_tokens": 10},
    "completion_tokens_details": {"reasoning_tokens": 2},
}


class Meter:
    def __init__(self, refuse_after: int | None = None) -> None:
        self.asked: list[ModelCall] = []
        self.reports: list[ModelCallUsage] = []
        self.refuse_after = refuse_after

    async def before_model_call(self, call: ModelCall):
        self.asked.append(call)
        if self.refuse_after is not None and len(self.asked) > self.refuse_after:
            return BudgetRefusal("Acme", "organization", "tokens", "day", "100 tokens")
        return Proceed(len(self.asked))

    async def after_model_call(self, report: ModelCallUsage) -> None:
        self.reports.append(report)


def metered(server, meter, **kwargs):
    llm = OpenAICompatibleLLM(base_url=server.base_url, api_key="sk-test", model="m", max_retries=0)
    return MeteredLLM(llm, meter, endpoint_id="ep-1", max_output_tokens=50, **kwargs)


async def test_chat_and_stream_are_reported_with_their_purpose_tokens_and_reservation(scripted_llm):
    scripted_llm.script(text("hi", usage=REPORTED), text("streamed", usage=REPORTED))
    meter = Meter()
    llm = metered(scripted_llm, meter)

    await llm.chat([{"role": "user", "content": "hello"}])
    with call_purpose(CallPurpose.SYNTHESIS):
        stream = llm.stream_chat([{"role": "user", "content": "hello"}], usage=Usage())
    parts = [delta async for delta in stream]  # consumed outside the purpose: it was taken at the call

    assert "".join(parts) == "streamed"
    assert [r.purpose for r in meter.reports] == [CallPurpose.TOOL_LOOP, CallPurpose.SYNTHESIS]
    assert [r.reservation for r in meter.reports] == [1, 2]
    for report in meter.reports:
        usage = report.usage
        assert (usage.prompt_tokens, usage.cached_tokens, usage.reasoning_tokens) == (30, 10, 2)
        assert report.endpoint_id == "ep-1" and not report.failed
    assert all(call.estimated_tokens >= 50 + 5 for call in meter.asked)


async def test_a_refused_call_is_never_sent_and_a_failed_one_is_reported_as_failed(scripted_llm):
    scripted_llm.script(error(400, message="bad request"))
    meter = Meter(refuse_after=1)
    llm = metered(scripted_llm, meter)

    with pytest.raises(LLMError):
        await llm.chat([{"role": "user", "content": "hello"}])
    with pytest.raises(BudgetExceededError) as refused:
        await llm.chat([{"role": "user", "content": "hello"}])

    assert len(scripted_llm.requests) == 1  # the refused call never left the process
    assert refused.value.refusal.name == "Acme"
    assert [r.failed for r in meter.reports] == [True]  # its reservation can be released


def test_the_prompt_bound_is_at_least_the_bytes_of_what_is_sent():
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "订单 7 在哪里？"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{}"}}],
        },
    ]
    bound = prompt_bound(messages, [{"type": "function", "function": {"name": "f"}}])
    assert bound >= len("Be brief.") + len("订单 7 在哪里？".encode()) + 3 * 8
