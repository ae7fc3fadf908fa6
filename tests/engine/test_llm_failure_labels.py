"""A run ended by its model endpoint tells the user what failed, in the question's language: unreachable,
no answer in time, the key refused, the model unknown, a server error. No internal class name reaches the
user ("the language model failed (LLMError)" said nothing)."""

from __future__ import annotations

import socket

import pytest

from agents.engine.llm import OpenAICompatibleLLM
from agents.engine.react import ReActAgent
from tests.engine.doubles import registry_of
from tests.fakes.openai_server import error, hang

CLASS_NAMES = ("LLMError", "APIConnectionError", "APITimeoutError", "APIStatusError", "Error")


@pytest.mark.parametrize(
    ("reply", "english", "chinese"),
    [
        (error(401, message="bad key"), "refused the API key (HTTP 401)", "拒绝了 API 密钥（HTTP 401）"),
        (error(403, message="forbidden"), "refused the API key (HTTP 403)", "拒绝了 API 密钥（HTTP 403）"),
        (
            error(404, message="The model `gpt-9` does not exist"),
            "does not know the model “scripted-model” (HTTP 404)",
            "不认识模型“scripted-model”（HTTP 404）",
        ),
        (
            error(503, message="overloaded"),
            "answered with a server error (HTTP 503)",
            "服务器错误（HTTP 503）",
        ),
        (error(418, message="teapot"), "answered with an error (HTTP 418)", "返回了错误（HTTP 418）"),
    ],
    ids=["key-401", "key-403", "model-404", "server-503", "other-418"],
)
@pytest.mark.parametrize("language", ["en", "zh"])
async def test_an_endpoint_failure_is_named_in_the_users_language(
    scripted_llm, make_llm, reply, english, chinese, language
):
    scripted_llm.script(reply)
    question = "go" if language == "en" else "查一下订单"
    result = await ReActAgent(make_llm(), registry_of()).run(question)
    assert result.stop_reason == "llm_error"
    assert (english if language == "en" else chinese) in result.answer
    assert not any(name in result.answer for name in CLASS_NAMES)


async def test_an_endpoint_that_does_not_answer_in_time_is_named(scripted_llm, make_llm):
    scripted_llm.script(hang(5))
    result = await ReActAgent(make_llm(timeout=0.2), registry_of()).run("go")
    assert "did not answer in time" in result.answer
    assert not any(name in result.answer for name in CLASS_NAMES)


async def test_an_endpoint_nobody_listens_on_is_unreachable():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again when the block ends: nothing listens there
    llm = OpenAICompatibleLLM(
        base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-x", model="m", timeout=2, max_retries=0
    )
    result = await ReActAgent(llm, registry_of()).run("订单")
    assert "无法连接" in result.answer
    english = await ReActAgent(llm, registry_of()).run("orders")
    assert "cannot be reached" in english.answer
    assert not any(name in english.answer for name in CLASS_NAMES)
