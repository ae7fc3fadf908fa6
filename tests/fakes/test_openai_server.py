"""Self-tests of the scripted OpenAI-compatible server, through the real SDK."""

from __future__ import annotations

import openai
import pytest

from tests.fakes.openai_server import NO_REPLY_MESSAGE, ScriptedOpenAIServer, call, text, tool_calls


@pytest.fixture(scope="module")
def scripted_llm():
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture(autouse=True)
def _fresh(scripted_llm: ScriptedOpenAIServer):
    scripted_llm.reset()


@pytest.fixture
async def client(scripted_llm: ScriptedOpenAIServer):
    sdk = openai.AsyncOpenAI(base_url=scripted_llm.base_url, api_key="sk-test", max_retries=0, timeout=5)
    try:
        yield sdk
    finally:
        await sdk.close()


async def test_replies_are_consumed_in_order_and_requests_recorded(scripted_llm, client):
    scripted_llm.script(text("first"), text("second"))

    one = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "a"}])
    two = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "b"}])

    assert [one.choices[0].message.content, two.choices[0].message.content] == ["first", "second"]
    assert [r["messages"][0]["content"] for r in scripted_llm.requests] == ["a", "b"]
    assert scripted_llm.pending == 0


async def test_empty_queue_fails_loudly_with_a_500(scripted_llm, client):
    with pytest.raises(openai.InternalServerError, match=NO_REPLY_MESSAGE):
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "a"}])


async def test_callable_reply_sees_the_request_body(scripted_llm, client):
    scripted_llm.script(lambda body: text(f"echo {body['messages'][-1]['content']}"))

    reply = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])

    assert reply.choices[0].message.content == "echo hi"


async def test_streamed_tool_call_deltas_reassemble_to_the_scripted_call(scripted_llm, client):
    scripted_llm.script(tool_calls(call("search", {"query": "a long enough query to split"}, id="call_1")))

    stream = await client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "x"}], stream=True
    )
    arguments, names, finish = "", [], None
    async for chunk in stream:
        for choice in chunk.choices:
            for delta in choice.delta.tool_calls or []:
                if delta.function.name:
                    names.append((delta.id, delta.function.name))
                arguments += delta.function.arguments or ""
            finish = choice.finish_reason or finish

    assert names == [("call_1", "search")]
    assert arguments == '{"query": "a long enough query to split"}'
    assert finish == "tool_calls"


def test_reset_forgets_replies_and_requests(scripted_llm):
    scripted_llm.script(text("unused"))
    scripted_llm.requests.append({"fake": True})

    scripted_llm.reset()

    assert scripted_llm.pending == 0
    assert scripted_llm.requests == []
