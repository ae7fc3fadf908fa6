"""Passages are reranked through a model endpoint of role "rerank": the scripted OpenAI-compatible server's
``/rerank`` (tests/fakes/rerank.py, Jina AI's wire format), reached through the real ``openai`` SDK's client
and the SSRF guard. Each way it can fail comes back as a typed failure, and an answer is read strictly."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest

from agents.engine.llm import aclose_shared_clients
from agents.knowledge.rerank import (
    RERANK_TIMEOUT_SECONDS,
    Reranked,
    RerankEndpoint,
    RerankFailed,
    RerankFailure,
    rerank_endpoint_of,
    rerank_texts,
)
from agents.models import ModelProvider, ModelRole
from tests.agents.factories import ModelConfigFactory
from tests.agents.knowledge.scripted_endpoints import altered, scripted_endpoint
from tests.fakes.openai_server import ScriptedOpenAIServer, error, hang, malformed
from tests.fakes.rerank import relevance, rerank_answer

KEY = "sk-rerank-secret-0001"
GATEWAY_SECRET = "gw-rerank-secret-42"
QUERY = "finance director approval"
DOCUMENTS = [
    "Suppliers are checked by the purchasing team.",
    "Payments need the approval of the finance director.",
    "The director of finance reads every report.",
]


@pytest.fixture(autouse=True)
async def _close_clients() -> AsyncIterator[None]:
    yield
    await aclose_shared_clients()


@pytest.fixture
def endpoint(scripted_llm: ScriptedOpenAIServer) -> RerankEndpoint:
    return scripted_endpoint(RerankEndpoint, scripted_llm, key=KEY, model="reranker")


def answer_with(change: Any) -> Any:
    """A scripted reply: the fake's answer to the request, altered by ``change(answer)``."""
    return altered(rerank_answer, change)


# --- success -------------------------------------------------------------------------------------------------


async def test_documents_come_back_in_the_endpoints_order_with_its_scores_and_token_count(
    scripted_llm, endpoint
):
    outcome = await rerank_texts(endpoint, QUERY, DOCUMENTS, top_n=2)

    assert isinstance(outcome, Reranked)
    assert outcome.order == ((1, relevance(QUERY, DOCUMENTS[1])), (2, relevance(QUERY, DOCUMENTS[2])))
    assert outcome.order[0][1] > outcome.order[1][1]
    assert outcome.tokens == rerank_answer({"query": QUERY, "documents": DOCUMENTS})["usage"]["total_tokens"]
    assert outcome.model == "reranker"
    (body,) = scripted_llm.rerank_requests
    assert body == {"model": "reranker", "query": QUERY, "documents": DOCUMENTS, "top_n": 2}
    assert scripted_llm.rerank_paths == ["/v1/rerank"]
    assert scripted_llm.rerank_headers[0]["authorization"] == f"Bearer {KEY}"


async def test_scores_answered_out_of_order_are_put_best_first(scripted_llm, endpoint):
    scripted_llm.script_rerank(answer_with(lambda answer: answer["results"].reverse()))

    outcome = await rerank_texts(endpoint, QUERY, DOCUMENTS, top_n=3)

    assert isinstance(outcome, Reranked)
    assert [index for index, _score in outcome.order] == [1, 2, 0]


async def test_top_n_is_never_more_than_the_documents_sent(scripted_llm, endpoint):
    outcome = await rerank_texts(endpoint, QUERY, DOCUMENTS[:2], top_n=10)

    assert isinstance(outcome, Reranked) and len(outcome.order) == 2
    assert scripted_llm.rerank_requests[0]["top_n"] == 2


async def test_no_documents_is_no_request(scripted_llm, endpoint):
    outcome = await rerank_texts(endpoint, QUERY, [], top_n=5)

    assert outcome == Reranked(order=(), model="reranker", tokens=0)
    assert scripted_llm.rerank_requests == []


def _xinference_tokens(answer: dict[str, Any]) -> None:
    answer.pop("usage")
    answer["meta"] = {"api_version": None, "billed_units": None, "tokens": {"input_tokens": 77}}


def _cohere_search_units(answer: dict[str, Any]) -> None:
    answer.pop("usage")
    answer["meta"] = {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}}


@pytest.mark.parametrize(("change", "tokens"), [(_xinference_tokens, 77), (_cohere_search_units, 0)])
async def test_tokens_are_read_where_each_provider_puts_them_and_zero_when_none_is_said(
    scripted_llm, endpoint, change, tokens
):
    scripted_llm.script_rerank(answer_with(change))

    outcome = await rerank_texts(endpoint, QUERY, DOCUMENTS, top_n=1)

    assert isinstance(outcome, Reranked) and outcome.tokens == tokens


@pytest.mark.django_db
def test_a_stored_endpoint_is_called_within_a_short_timeout_without_retries_with_its_headers(org):
    config = ModelConfigFactory(
        organization=org,
        role=ModelRole.RERANK,
        provider=ModelProvider.COHERE,
        base_url="https://api.cohere.ai/v2",
        model="rerank-v3.5",
        api_key=KEY,
        timeout=60,
        extra_headers=json.dumps({"X-Gateway-Key": GATEWAY_SECRET}),
    )

    endpoint = rerank_endpoint_of(config)

    assert endpoint.timeout == RERANK_TIMEOUT_SECONDS and endpoint.max_retries == 0
    assert endpoint.path == "/rerank" and endpoint.api_key_header is None
    assert dict(endpoint.headers) == {"X-Gateway-Key": GATEWAY_SECRET}
    assert KEY not in repr(endpoint) and GATEWAY_SECRET not in repr(endpoint)
    config.timeout = 3
    assert rerank_endpoint_of(config).timeout == 3


@pytest.mark.django_db
def test_a_dashscope_endpoint_posts_to_its_reranks_path(org, scripted_llm):
    from asgiref.sync import async_to_sync

    config = ModelConfigFactory(
        organization=org,
        role=ModelRole.RERANK,
        provider=ModelProvider.QWEN_DASHSCOPE,
        base_url=scripted_llm.base_url,
        model="qwen3-rerank",
        api_key=KEY,
    )

    outcome = async_to_sync(rerank_texts)(
        rerank_endpoint_of(config), "审批", ["财务总监审批", "供应商"], top_n=1
    )

    assert isinstance(outcome, Reranked) and outcome.order[0][0] == 0
    assert scripted_llm.rerank_paths == ["/v1/reranks"]


# --- failures ------------------------------------------------------------------------------------------------


async def test_an_endpoint_nobody_listens_on_is_unreachable(endpoint):
    outcome = await rerank_texts(
        replace(endpoint, base_url="http://127.0.0.1:9/v1"), QUERY, DOCUMENTS, top_n=1
    )

    assert isinstance(outcome, RerankFailed) and outcome.code == RerankFailure.UNREACHABLE
    assert outcome.figures["reason"] == "connection" and outcome.figures["host"] == "127.0.0.1"


async def test_an_endpoint_that_does_not_answer_in_time_is_unreachable(scripted_llm, endpoint):
    scripted_llm.script_rerank(hang(5))

    outcome = await rerank_texts(replace(endpoint, timeout=0.3), QUERY, DOCUMENTS, top_n=1)

    assert isinstance(outcome, RerankFailed) and outcome.code == RerankFailure.UNREACHABLE
    assert outcome.figures["reason"] == "timeout"


async def test_a_server_error_is_unreachable_and_not_retried(scripted_llm, endpoint):
    scripted_llm.script_rerank(error(503), error(503))

    outcome = await rerank_texts(endpoint, QUERY, DOCUMENTS, top_n=1)

    assert isinstance(outcome, RerankFailed) and outcome.code == RerankFailure.UNREACHABLE
    assert outcome.figures["status"] == 503
    assert len(scripted_llm.rerank_requests) == 1


async def test_a_refused_key_is_refused_and_the_key_is_not_repeated(scripted_llm, endpoint):
    scripted_llm.script_rerank(error(401, message=f"Incorrect API key provided: {KEY}"))

    outcome = await rerank_texts(endpoint, QUERY, DOCUMENTS, top_n=1)

    assert isinstance(outcome, RerankFailed) and outcome.code == RerankFailure.REFUSED
    assert outcome.figures["status"] == 401
    assert KEY not in json.dumps(dict(outcome.figures)) and "***" in outcome.figures["message"]


async def test_a_rate_limited_endpoint_is_rate_limited(scripted_llm, endpoint):
    scripted_llm.script_rerank(error(429, message="Rate limit reached"))

    outcome = await rerank_texts(endpoint, QUERY, DOCUMENTS, top_n=1)

    assert isinstance(outcome, RerankFailed) and outcome.code == RerankFailure.RATE_LIMITED


async def test_a_loopback_endpoint_the_operator_did_not_allow_is_refused_before_anything_is_sent(
    scripted_llm, endpoint
):
    outcome = await rerank_texts(replace(endpoint, allowed_private_hosts=()), QUERY, DOCUMENTS, top_n=1)

    assert isinstance(outcome, RerankFailed) and outcome.code == RerankFailure.REFUSED
    assert outcome.figures["reason"] == "address_refused"
    assert scripted_llm.rerank_requests == []


async def test_a_key_no_header_can_carry_is_refused_before_anything_is_sent(scripted_llm, endpoint):
    outcome = await rerank_texts(replace(endpoint, api_key="sk-ключ"), QUERY, DOCUMENTS, top_n=1)

    assert isinstance(outcome, RerankFailed) and outcome.figures == {"reason": "unsendable_header"}
    assert scripted_llm.rerank_requests == []


# --- strict reading ------------------------------------------------------------------------------------------


def _drop_last(answer: dict[str, Any]) -> None:
    answer["results"].pop()


def _index_out_of_range(answer: dict[str, Any]) -> None:
    answer["results"][0]["index"] = 7


def _index_twice(answer: dict[str, Any]) -> None:
    answer["results"][1]["index"] = answer["results"][0]["index"]


def _index_as_boolean(answer: dict[str, Any]) -> None:
    answer["results"][0]["index"] = True


def _score_as_text(answer: dict[str, Any]) -> None:
    answer["results"][0]["relevance_score"] = "0.9"


def _no_score(answer: dict[str, Any]) -> None:
    answer["results"][0].pop("relevance_score")


def _no_results(answer: dict[str, Any]) -> None:
    answer.pop("results")


def _results_not_objects(answer: dict[str, Any]) -> None:
    answer["results"] = [1, 2]


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (_drop_last, "count"),
        (_index_out_of_range, "index"),
        (_index_twice, "index"),
        (_index_as_boolean, "index"),
        (_score_as_text, "score"),
        (_no_score, "score"),
        (_no_results, "no_results"),
        (_results_not_objects, "no_results"),
    ],
)
async def test_an_answer_that_is_not_one_score_per_document_asked_is_a_bad_answer(
    scripted_llm, endpoint, change, reason
):
    scripted_llm.script_rerank(answer_with(change))

    outcome = await rerank_texts(endpoint, QUERY, DOCUMENTS, top_n=2)

    assert isinstance(outcome, RerankFailed) and outcome.code == RerankFailure.BAD_ANSWER
    assert outcome.figures == {"reason": reason}


async def test_nan_written_into_the_json_is_a_bad_answer(scripted_llm, endpoint):
    def with_nan(body: dict[str, Any]) -> Any:
        text = json.dumps(rerank_answer(body))
        return malformed(text.replace('"relevance_score": ', '"relevance_score": NaN, "x": ', 1).encode())

    scripted_llm.script_rerank(with_nan)

    outcome = await rerank_texts(endpoint, QUERY, DOCUMENTS, top_n=1)

    assert isinstance(outcome, RerankFailed) and outcome.figures == {"reason": "not_json"}


async def test_an_answer_that_is_not_json_is_a_bad_answer(scripted_llm, endpoint):
    scripted_llm.script_rerank(malformed(b"<html>gateway</html>", content_type="text/html"))

    outcome = await rerank_texts(endpoint, QUERY, DOCUMENTS, top_n=1)

    assert isinstance(outcome, RerankFailed) and outcome.figures == {"reason": "not_json"}
