"""Texts are embedded through a model endpoint of role "embedding": the scripted OpenAI-compatible server's
``/embeddings`` (tests/fakes/embeddings.py), reached through the real ``openai`` SDK and the SSRF guard.
Each way it can fail comes back as a typed failure, and an answer is read strictly."""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest
from django.utils import translation

from agents.engine.llm import aclose_shared_clients
from agents.knowledge.embeddings import (
    MAX_BATCH_CHARS,
    Embedded,
    EmbeddingEndpoint,
    EmbeddingFailed,
    EmbeddingFailure,
    batches,
    embed_texts,
    embed_texts_sync,
    embedding_endpoint_of,
)
from agents.models import ModelProvider, ModelRole
from tests.agents.factories import ModelConfigFactory
from tests.agents.knowledge.scripted_endpoints import altered, scripted_endpoint
from tests.fakes.embeddings import embeddings_answer, fake_embedding
from tests.fakes.openai_server import ScriptedOpenAIServer, error, hang, malformed

KEY = "sk-embedding-secret-0001"
GATEWAY_SECRET = "gw-embedding-secret-42"


@pytest.fixture(autouse=True)
async def _close_clients() -> AsyncIterator[None]:
    yield
    await aclose_shared_clients()


@pytest.fixture
def endpoint(scripted_llm: ScriptedOpenAIServer) -> EmbeddingEndpoint:
    return scripted_endpoint(EmbeddingEndpoint, scripted_llm, key=KEY, model="embedder")


def answer_with(change: Any) -> Any:
    """A scripted reply: the fake's answer to the request, altered by ``change(answer)``."""
    return altered(embeddings_answer, change)


def close(a: tuple[float, ...], b: list[float]) -> bool:
    return len(a) == len(b) and all(math.isclose(x, y, abs_tol=1e-9) for x, y in zip(a, b, strict=True))


# --- success -------------------------------------------------------------------------------------------------


async def test_texts_are_embedded_in_their_order_with_the_endpoints_token_count(scripted_llm, endpoint):
    texts = ["Payments over fifty thousand need approval", "付款审批流程", "travel policy"]

    outcome = await embed_texts(endpoint, texts)

    assert isinstance(outcome, Embedded)
    assert outcome.dimension == 64 and outcome.model == "embedder"
    assert all(
        close(vector, fake_embedding(text)) for vector, text in zip(outcome.vectors, texts, strict=True)
    )
    assert outcome.tokens == embeddings_answer({"input": texts})["usage"]["prompt_tokens"]
    (body,) = scripted_llm.embedding_requests
    assert body == {"model": "embedder", "input": texts, "encoding_format": "float"}
    assert scripted_llm.embedding_headers[0]["authorization"] == f"Bearer {KEY}"


async def test_vectors_answered_out_of_order_are_put_back_in_the_texts_order(scripted_llm, endpoint):
    scripted_llm.script_embeddings(answer_with(lambda answer: answer["data"].reverse()))

    outcome = await embed_texts(endpoint, ["first text", "second text"])

    assert isinstance(outcome, Embedded)
    assert close(outcome.vectors[0], fake_embedding("first text"))


async def test_a_base64_answer_is_read_as_float32(scripted_llm, endpoint):
    def as_base64(body: dict[str, Any]) -> Any:
        return malformed(json.dumps(embeddings_answer({**body, "encoding_format": "base64"})).encode())

    scripted_llm.script_embeddings(as_base64)

    outcome = await embed_texts(endpoint, ["采购审批"])

    assert isinstance(outcome, Embedded)
    assert all(
        math.isclose(x, y, abs_tol=1e-6)
        for x, y in zip(outcome.vectors[0], fake_embedding("采购审批"), strict=True)
    )


async def test_texts_go_in_batches_of_the_endpoints_size_one_request_after_another(scripted_llm, endpoint):
    texts = [f"passage number {n}" for n in range(25)]

    outcome = await embed_texts(replace(endpoint, batch_size=10), texts)

    assert isinstance(outcome, Embedded) and len(outcome.vectors) == 25
    assert [len(body["input"]) for body in scripted_llm.embedding_requests] == [10, 10, 5]
    assert close(outcome.vectors[24], fake_embedding("passage number 24"))


def test_a_batch_is_bounded_by_characters_too():
    long = "x" * (MAX_BATCH_CHARS // 2)
    assert batches([long, long, long, "short"], 64) == [(0, 2), (2, 4)]
    assert batches(["y" * (MAX_BATCH_CHARS + 1), "z"], 64) == [(0, 1), (1, 2)]
    assert batches([], 64) == []


@pytest.mark.django_db
def test_a_dashscope_endpoint_sends_ten_texts_a_request_as_its_provider_documents(org):
    config = ModelConfigFactory(
        organization=org,
        role=ModelRole.EMBEDDING,
        provider=ModelProvider.QWEN_DASHSCOPE,
        model="text-embedding-v4",
        base_url="https://dashscope.aliyuncs.com/compatible-mode/v1",
    )
    assert embedding_endpoint_of(config).batch_size == 10
    assert embedding_endpoint_of(replace_model(config, "my-own-model")).batch_size == 64


def replace_model(config: Any, model: str) -> Any:
    config.model = model
    return config


@pytest.mark.django_db
def test_a_stored_endpoint_is_embedded_from_sync_code_with_its_headers_key_header_and_api_version(
    org, scripted_llm
):
    config = ModelConfigFactory(
        organization=org,
        role=ModelRole.EMBEDDING,
        provider=ModelProvider.AZURE_OPENAI,
        base_url=scripted_llm.base_url,
        model="text-embedding-3-small",
        api_key=KEY,
        api_version="2024-10-21",
        extra_headers=json.dumps({"X-Gateway-Key": GATEWAY_SECRET}),
    )

    outcome = embed_texts_sync(config, ["报销政策", "travel policy"])

    assert isinstance(outcome, Embedded) and len(outcome.vectors) == 2
    headers = scripted_llm.embedding_headers[0]
    assert headers["api-key"] == KEY and "authorization" not in headers
    assert headers["x-gateway-key"] == GATEWAY_SECRET


# --- failures ------------------------------------------------------------------------------------------------


async def test_an_endpoint_nobody_listens_on_is_unreachable(endpoint):
    outcome = await embed_texts(replace(endpoint, base_url="http://127.0.0.1:9/v1"), ["text"])

    assert isinstance(outcome, EmbeddingFailed) and outcome.code == EmbeddingFailure.UNREACHABLE
    assert "127.0.0.1" in outcome.detail


async def test_an_endpoint_that_does_not_answer_in_time_is_unreachable(scripted_llm, endpoint):
    scripted_llm.script_embeddings(hang(5))

    outcome = await embed_texts(replace(endpoint, timeout=0.3), ["text"])

    assert isinstance(outcome, EmbeddingFailed) and outcome.code == EmbeddingFailure.UNREACHABLE
    assert outcome.figures["timeout"] == 0.3


async def test_a_server_error_after_the_retries_is_unreachable(scripted_llm, endpoint):
    scripted_llm.script_embeddings(error(503), error(503))

    outcome = await embed_texts(replace(endpoint, max_retries=1), ["text"])

    assert isinstance(outcome, EmbeddingFailed) and outcome.code == EmbeddingFailure.UNREACHABLE
    assert outcome.figures["status"] == 503
    assert len(scripted_llm.embedding_requests) == 2


async def test_a_refused_key_is_refused_and_the_key_is_not_repeated(scripted_llm, endpoint):
    scripted_llm.script_embeddings(
        error(401, message=f"Incorrect API key provided: {KEY}", code="invalid_api_key")
    )

    outcome = await embed_texts(endpoint, ["text"])

    assert isinstance(outcome, EmbeddingFailed) and outcome.code == EmbeddingFailure.REFUSED
    assert outcome.figures["status"] == 401
    assert KEY not in outcome.detail and "***" in outcome.detail


async def test_an_unknown_model_is_refused(scripted_llm, endpoint):
    scripted_llm.script_embeddings(error(404, message="The model `embedder` does not exist"))

    outcome = await embed_texts(endpoint, ["text"])

    assert isinstance(outcome, EmbeddingFailed) and outcome.code == EmbeddingFailure.REFUSED
    assert "does not exist" in outcome.detail


async def test_a_loopback_endpoint_the_operator_did_not_allow_is_refused_before_anything_is_sent(
    scripted_llm, endpoint
):
    outcome = await embed_texts(replace(endpoint, allowed_private_hosts=()), ["text"])

    assert isinstance(outcome, EmbeddingFailed) and outcome.code == EmbeddingFailure.REFUSED
    assert outcome.figures == {"reason": "address_refused"}
    assert scripted_llm.embedding_requests == []


async def test_a_key_no_header_can_carry_is_refused_before_anything_is_sent(scripted_llm, endpoint):
    outcome = await embed_texts(replace(endpoint, api_key="sk-ключ"), ["text"])

    assert isinstance(outcome, EmbeddingFailed) and outcome.code == EmbeddingFailure.REFUSED
    assert scripted_llm.embedding_requests == []


async def test_a_rate_limited_endpoint_says_how_long_to_wait(scripted_llm, endpoint):
    # A wait longer than the client's bound is not retried: the one 429 comes back at once.
    scripted_llm.script_embeddings(
        error(429, message="Rate limit reached", headers={"retry-after-ms": "30000"})
    )

    outcome = await embed_texts(replace(endpoint, max_retries=2), ["text"])

    assert isinstance(outcome, EmbeddingFailed) and outcome.code == EmbeddingFailure.RATE_LIMITED
    assert outcome.retry_after == 30
    assert len(scripted_llm.embedding_requests) == 1


async def test_a_failure_is_told_in_the_callers_language(scripted_llm, endpoint):
    scripted_llm.script_embeddings(error(400, message="bad input"))

    with translation.override("zh-hans"):
        outcome = await embed_texts(endpoint, ["text"])

    assert isinstance(outcome, EmbeddingFailed)
    assert "嵌入" in outcome.detail or "向量" in outcome.detail


async def test_an_empty_text_is_a_programming_error(endpoint):
    with pytest.raises(ValueError, match="empty"):
        await embed_texts(endpoint, ["text", "  "])


# --- strict reading ------------------------------------------------------------------------------------------


def _drop_last(answer: dict[str, Any]) -> None:
    answer["data"].pop()


def _shorten_second(answer: dict[str, Any]) -> None:
    answer["data"][1]["embedding"] = answer["data"][1]["embedding"][:10]


def _beyond_float32(answer: dict[str, Any]) -> None:
    answer["data"][0]["embedding"][0] = 1e39


def _zero_vector(answer: dict[str, Any]) -> None:
    answer["data"][0]["embedding"] = [0.0] * 64


def _boolean_values(answer: dict[str, Any]) -> None:
    answer["data"][0]["embedding"] = [True] * 64


def _same_index_twice(answer: dict[str, Any]) -> None:
    answer["data"][1]["index"] = 0


def _no_data(answer: dict[str, Any]) -> None:
    answer.pop("data")


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (_drop_last, "count"),
        (_shorten_second, "dimension"),
        (_beyond_float32, "not_finite"),
        (_zero_vector, "zero"),
        (_boolean_values, "not_numbers"),
        (_same_index_twice, "index"),
        (_no_data, "no_data"),
    ],
)
async def test_an_answer_that_is_not_one_finite_vector_per_text_of_one_dimension_is_a_bad_answer(
    scripted_llm, endpoint, change, reason
):
    scripted_llm.script_embeddings(answer_with(change))

    outcome = await embed_texts(endpoint, ["first", "second"])

    assert isinstance(outcome, EmbeddingFailed) and outcome.code == EmbeddingFailure.BAD_ANSWER
    assert outcome.figures["reason"] == reason


async def test_nan_written_into_the_json_is_a_bad_answer(scripted_llm, endpoint):
    def with_nan(body: dict[str, Any]) -> Any:
        text = json.dumps(embeddings_answer(body))
        first = text.index('"embedding": [') + len('"embedding": [')
        return malformed((text[:first] + "NaN, " + text[first:]).encode())

    scripted_llm.script_embeddings(with_nan)

    outcome = await embed_texts(endpoint, ["one"])

    assert isinstance(outcome, EmbeddingFailed) and outcome.code == EmbeddingFailure.BAD_ANSWER
    assert outcome.figures["reason"] == "not_json"


async def test_an_answer_that_is_not_json_is_a_bad_answer(scripted_llm, endpoint):
    scripted_llm.script_embeddings(malformed(b"<html>gateway</html>", content_type="text/html"))

    outcome = await embed_texts(endpoint, ["one"])

    assert isinstance(outcome, EmbeddingFailed) and outcome.figures["reason"] == "not_json"


async def test_vectors_of_another_dimension_than_the_knowledge_bases_are_a_bad_answer(scripted_llm, endpoint):
    outcome = await embed_texts(endpoint, ["one"], dimension=1024)

    assert isinstance(outcome, EmbeddingFailed) and outcome.code == EmbeddingFailure.BAD_ANSWER
    assert outcome.figures == {"reason": "dimension", "got": 64, "expected": 1024}


async def test_a_later_batch_of_another_dimension_is_a_bad_answer(scripted_llm, endpoint):
    def shorter(body: dict[str, Any]) -> Any:
        return malformed(json.dumps(embeddings_answer(body, dimension=32)).encode())

    scripted_llm.script_embeddings(answer_with(lambda answer: None), shorter)

    outcome = await embed_texts(replace(endpoint, batch_size=1), ["one", "two"])

    assert isinstance(outcome, EmbeddingFailed) and outcome.figures["reason"] == "dimension"
