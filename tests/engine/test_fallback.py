"""FallbackLLM through the real openai SDK: a second scripted server answers when the first is unavailable."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from agents.engine.completion import Usage
from agents.engine.fallback import FallbackAnswered, FallbackEndpoint, FallbackLLM
from agents.engine.llm import ContextLengthExceededError, LLMError, OpenAICompatibleLLM
from tests.fakes.llm_fixtures import SCRIPTED_API_KEY
from tests.fakes.openai_server import ScriptedOpenAIServer, context_length_error, error, hang, text
from tests.fakes.threaded_server import reset_around

ASK = [{"role": "user", "content": "hello"}]


@pytest.fixture(scope="module")
def second_server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture
def backup(second_server: ScriptedOpenAIServer) -> Iterator[ScriptedOpenAIServer]:
    yield from reset_around(second_server)


def closed_port_url() -> str:
    """A loopback URL on a port nothing listens on (taken and released): connecting is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def llm_on(base_url: str, *, timeout: float = 10.0, model: str = "m", **kwargs) -> OpenAICompatibleLLM:
    return OpenAICompatibleLLM(
        base_url=base_url, api_key=SCRIPTED_API_KEY, model=model, timeout=timeout, max_retries=0, **kwargs
    )


def chain(primary_url: str, backup_url: str, answered: list[FallbackAnswered], **kwargs) -> FallbackLLM:
    return FallbackLLM(
        [
            FallbackEndpoint("Primary", llm_on(primary_url, **kwargs)),
            FallbackEndpoint("Backup", llm_on(backup_url, model="b")),
        ],
        on_fallback=answered.append,
    )


@pytest.mark.parametrize(
    ("failure", "reason"),
    [(lambda: error(429, message="slow down"), "HTTP 429"), (lambda: error(500), "HTTP 500")],
    ids=["429", "500"],
)
async def test_the_fallback_answers_when_the_first_endpoint_fails(
    scripted_llm, make_llm, backup, failure, reason
):
    scripted_llm.script(failure())
    backup.script(text("from the backup"))
    answered: list[FallbackAnswered] = []

    response = await chain(scripted_llm.base_url, backup.base_url, answered).chat(ASK)

    assert response.content == "from the backup"
    assert answered == [FallbackAnswered("Backup", ("Primary",), reason)]
    assert backup.last_request["model"] == "b"
    assert backup.last_request["messages"] == ASK


async def test_the_fallback_answers_when_the_first_endpoint_times_out(scripted_llm, make_llm, backup):
    scripted_llm.script(hang(30))
    backup.script(text("in time"))
    answered: list[FallbackAnswered] = []

    llm = chain(scripted_llm.base_url, backup.base_url, answered, timeout=0.3)
    response = await llm.chat(ASK)

    assert response.content == "in time"
    assert answered[0].reason == "timeout"


async def test_the_fallback_answers_when_the_first_endpoint_refuses_the_connection(make_llm, backup):
    backup.script(text("still here"))
    answered: list[FallbackAnswered] = []

    response = await chain(closed_port_url(), backup.base_url, answered).chat(ASK)

    assert response.content == "still here"
    assert answered[0].reason == "connection error"


async def test_a_healthy_first_endpoint_answers_alone(scripted_llm, make_llm, backup):
    scripted_llm.script(text("first"))
    answered: list[FallbackAnswered] = []

    response = await chain(scripted_llm.base_url, backup.base_url, answered).chat(ASK)

    assert response.content == "first"
    assert answered == []
    assert backup.requests == []


async def test_an_error_of_the_request_itself_does_not_fall_back(scripted_llm, make_llm, backup):
    scripted_llm.script(context_length_error())

    with pytest.raises(ContextLengthExceededError):
        await chain(scripted_llm.base_url, backup.base_url, []).chat(ASK)

    assert backup.requests == []


async def test_the_last_endpoints_error_is_raised_when_all_fail(scripted_llm, make_llm, backup):
    scripted_llm.script(error(503))
    backup.script(error(502))

    with pytest.raises(LLMError) as caught:
        await chain(scripted_llm.base_url, backup.base_url, []).chat(ASK)

    assert caught.value.status_code == 502


async def test_an_endpoint_that_failed_is_tried_last_for_a_while(scripted_llm, make_llm, backup):
    scripted_llm.script(error(500), text("back again"))
    backup.script(text("one"), text("two"))
    llm = chain(scripted_llm.base_url, backup.base_url, [])

    first = await llm.chat(ASK)
    second = await llm.chat(ASK)

    assert (first.content, second.content) == ("one", "two")
    assert len(scripted_llm.requests) == 1  # not asked again while it cools down


async def test_a_stream_falls_back_before_its_first_chunk(scripted_llm, make_llm, backup):
    scripted_llm.script(error(500))
    backup.script(text("streamed by the backup"))
    answered: list[FallbackAnswered] = []
    usage = Usage()

    llm = chain(scripted_llm.base_url, backup.base_url, answered)
    deltas = [d async for d in llm.stream_chat(ASK, usage=usage)]

    assert "".join(deltas) == "streamed by the backup"
    assert [a.endpoint for a in answered] == ["Backup"]
    assert usage.calls == 1  # the failed attempt counts nothing


async def test_a_stream_does_not_fall_back_after_its_first_chunk(scripted_llm, make_llm, backup):
    scripted_llm.script(text("one two three four five six", chunk_size=4, die_after_chunks=1))
    backup.script(text("must not be used"))
    deltas: list[str] = []

    llm = chain(scripted_llm.base_url, backup.base_url, [])
    with pytest.raises(LLMError):
        async for delta in llm.stream_chat(ASK):
            deltas.append(delta)

    assert deltas == ["one "]
    assert backup.requests == []


def test_the_chain_has_only_the_abilities_every_endpoint_has():
    llm = FallbackLLM(
        [
            FallbackEndpoint("a", llm_on("http://a.example/v1", context_window=128000)),
            FallbackEndpoint(
                "b", llm_on("http://b.example/v1", abilities={"json_mode": False}, context_window=32000)
            ),
        ]
    )

    assert llm.abilities["json_mode"] is False
    assert llm.abilities["tool_call"] is True
    assert llm.context_window == 32000
