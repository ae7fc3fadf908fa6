"""Self-tests of the scripted OpenAI-compatible server, through the real SDK."""

from __future__ import annotations

from dataclasses import replace

import openai
import pytest

from agents.engine.llm import DEFAULT_ABILITIES
from tests.fakes.embeddings import fake_embedding
from tests.fakes.openai_server import NO_REPLY_MESSAGE, ScriptedOpenAIServer, call, error, text, tool_calls
from tests.fakes.provider_profiles import GLM_ZHIPU, OPENAI, PROFILES, QWEN_DASHSCOPE, VLLM_NO_TOOL_PARSER


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


# --- provider profiles ---------------------------------------------------------------------------


def test_every_profile_states_every_ability_and_cites_its_sources():
    keys = {*DEFAULT_ABILITIES, "reasoning_replay"}
    for profile in PROFILES:
        assert set(profile.abilities) == keys, profile.name
        assert all(s.startswith("https://") for s in (profile.source, *profile.references)), profile.name
    assert len({p.name for p in PROFILES}) == len(PROFILES) == 11


async def test_a_profile_moves_the_base_url_to_its_base_path(scripted_llm):
    scripted_llm.profile = QWEN_DASHSCOPE
    assert scripted_llm.base_url.endswith("/compatible-mode/v1")
    scripted_llm.profile = None
    assert scripted_llm.base_url.endswith("/v1")


async def test_openai_json_mode_without_the_word_json_is_refused(scripted_llm, client):
    scripted_llm.profile = OPENAI
    scripted_llm.script(text("{}"))

    with pytest.raises(openai.BadRequestError, match="must contain the word 'json'"):
        await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], response_format={"type": "json_object"}
        )
    reply = await client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "answer in JSON"}],
        response_format={"type": "json_object"},
    )

    assert reply.choices[0].message.content == "{}"
    assert scripted_llm.quirks["json_word_refused"] == 1


async def test_glm_refuses_a_forced_tool_choice_before_taking_a_reply(scripted_llm, client):
    scripted_llm.profile = GLM_ZHIPU
    scripted_llm.script(text("unused"))

    with pytest.raises(openai.BadRequestError, match="Tool choice must be auto"):
        await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], tools=[_TOOL], tool_choice="required"
        )

    assert scripted_llm.pending == 1 and scripted_llm.quirks["tool_choice_refused"] == 1


async def test_vllm_without_a_tool_parser_writes_the_call_into_content(scripted_llm, client):
    scripted_llm.profile = VLLM_NO_TOOL_PARSER
    scripted_llm.script(tool_calls(call("search", {"q": "x"})))

    reply = await client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "x"}], tools=[_TOOL]
    )

    message = reply.choices[0].message
    assert message.tool_calls is None
    assert message.content == '<tool_call>\n{"name": "search", "arguments": {"q": "x"}}\n</tool_call>'


async def test_a_model_without_tool_markers_writes_bare_json(scripted_llm, client):
    scripted_llm.profile = replace(VLLM_NO_TOOL_PARSER, tool_calls_as_text="json")
    scripted_llm.script(tool_calls(call("search", {"q": "x"})))

    reply = await client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "x"}], tools=[_TOOL]
    )

    assert reply.choices[0].message.content == '{"name": "search", "arguments": {"q": "x"}}'
    assert scripted_llm.quirks["tool_calls_as_text"] == 1


async def test_parallel_tool_calls_false_gets_one_call(scripted_llm, client):
    scripted_llm.profile = OPENAI
    scripted_llm.script(tool_calls(call("search", {"q": "a"}), call("search", {"q": "b"})))

    reply = await client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "x"}], tools=[_TOOL], parallel_tool_calls=False
    )

    assert len(reply.choices[0].message.tool_calls or []) == 1
    assert scripted_llm.quirks["parallel_reduced_to_one"] == 1


_TOOL = {"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}


# --- embeddings -----------------------------------------------------------------------------------------


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


async def test_embeddings_are_deterministic_unit_vectors_through_the_sdk(scripted_llm, client):
    texts = ["Payments need approval", "采购合同需要财务部审批"]

    floats = await client.embeddings.create(model="embedder", input=texts, encoding_format="float")
    packed = await client.embeddings.create(model="embedder", input=texts)  # the SDK asks for base64

    for item, said in zip(floats.data, texts, strict=True):
        assert item.embedding == fake_embedding(said)
        assert abs(_cosine(item.embedding, item.embedding) - 1) < 1e-9
    for item, said in zip(packed.data, texts, strict=True):
        assert all(abs(x - y) < 1e-6 for x, y in zip(item.embedding, fake_embedding(said), strict=True))
    assert floats.usage.prompt_tokens > 0
    assert [body["input"] for body in scripted_llm.embedding_requests] == [texts, texts]
    assert scripted_llm.requests == []  # the chat replies' queue and record are untouched


def test_texts_that_share_words_or_characters_are_closer_than_unrelated_ones():
    chinese = fake_embedding("采购合同超过五万元需要财务部审批")
    assert _cosine(chinese, fake_embedding("采购合同需要财务部审批吗")) > 0.5
    assert _cosine(chinese, fake_embedding("食堂早上八点开门")) < 0.3
    english = fake_embedding("travel expenses are reimbursed within thirty days")
    assert _cosine(english, fake_embedding("are travel expenses reimbursed")) > 0.5
    assert _cosine(english, fake_embedding("the cafeteria opens at eight")) < 0.3


async def test_a_scripted_embeddings_reply_is_sent_once_then_the_fake_answers_again(scripted_llm, client):
    scripted_llm.script_embeddings(error(401, message="bad key"))
    scripted_llm.embedding_dimension = 16

    with pytest.raises(openai.AuthenticationError):
        await client.embeddings.create(model="embedder", input="x", encoding_format="float")
    answer = await client.embeddings.create(model="embedder", input="x", encoding_format="float")

    assert len(answer.data[0].embedding) == 16
