"""structured_llm_call(): the spec's three-level degradation chain, through the scripted server."""

from __future__ import annotations

from agents.engine.structured import structured_llm_call
from tests.fakes.openai_server import call, tool_calls

SCHEMA = {
    "type": "object",
    "properties": {"tools": {"type": "array", "items": {"type": "string"}}},
    "required": ["tools"],
}
ASK = [{"role": "user", "content": "Which tools?"}]


async def test_level_native_succeeds_with_one_forced_function_call(scripted_llm, make_llm):
    scripted_llm.script(tool_calls(call("structured_output", {"tools": ["search"]})))

    result = await structured_llm_call(make_llm(), ASK, schema=SCHEMA)

    assert result.value == {"tools": ["search"]}
    assert result.level == "native"
    assert result.attempts == 1
    assert scripted_llm.requests[0]["tool_choice"] == {
        "type": "function",
        "function": {"name": "structured_output"},
    }
