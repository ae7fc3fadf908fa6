"""A search's passages scored against its question by a model endpoint of role "rerank".

The wire format is the one Jina AI's reranker API defined and the others took up::

    POST {base_url}/rerank          (DashScope's compatible mode: {base_url}/reranks)
    {"model": "…", "query": "…", "documents": ["passage", …], "top_n": 5}

    200 {"results": [{"index": 3, "relevance_score": 0.94}, …], "usage": {"total_tokens": 815}, …}

``index`` is the document's position in the request, ``results`` hold the ``top_n`` best, best first.
Read on each provider's page: Jina AI (https://jina.ai/reranker/, ``POST https://api.jina.ai/v1/rerank``);
Cohere v2 (https://docs.cohere.com/v2/docs/rerank-overview, ``POST https://api.cohere.ai/v2/rerank``, whose
answer counts ``meta.billed_units.search_units`` instead of tokens); vLLM
(https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html#re-rank-api: ``/rerank``,
``/v1/rerank`` and ``/v2/rerank`` implement Jina AI's API and Cohere's); DashScope's OpenAI-compatible
rerank (https://docs.qwencloud.com/api-reference/rerank/openai-rerank, ``…/compatible-api/v1/reranks``,
qwen3-rerank); Xinference (https://inference.readthedocs.io/en/latest/models/model_abilities/rerank.html,
``/v1/rerank``). The provider's path comes from its preset (:func:`agents.model_presets.rerank_path_for`).

The request goes through the same transport as an embedding's (:mod:`agents.knowledge.endpoint_access`:
the SSRF guard, the key in its provider's header, the extra headers), within
:data:`RERANK_TIMEOUT_SECONDS` (or the endpoint's shorter timeout) and without retries: a search waits for
it, and when it fails the search keeps its fused order rather than waiting longer. The answer is read
strictly: a JSON object whose ``results`` are exactly ``min(top_n, documents)`` objects, each the
``index`` of a document sent (each once) with a finite ``relevance_score``; anything else is a
``bad_answer``. Tokens: ``usage.total_tokens`` (Jina AI, vLLM, DashScope), else
``meta.tokens.input_tokens`` (Xinference), else 0 (not said: the caller estimates them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from agents.knowledge.endpoint_access import (
    EndpointAccess,
    EndpointSettings,
    PostFailed,
    PostFailure,
    access_settings_of,
    endpoint_post,
    strict_json,
)
from agents.model_presets import rerank_path_for

__all__ = [
    "RERANK_TIMEOUT_SECONDS",
    "RerankEndpoint",
    "RerankFailed",
    "RerankFailure",
    "RerankOutcome",
    "Reranked",
    "rerank_endpoint_of",
    "rerank_texts",
]

RERANK_TIMEOUT_SECONDS = 10.0  # a search's tool call has 30 s in all, the question's embedding included


class RerankFailure(StrEnum):
    UNREACHABLE = "unreachable"  # no answer: connection refused or reset, name not found, timeout, 5xx
    REFUSED = "refused"  # a 4xx (the key, the model name...), the address refused by the SSRF guard
    RATE_LIMITED = "rate_limited"  # 429
    BAD_ANSWER = "bad_answer"  # not one score per document asked for, each for a document sent


@dataclass(frozen=True, slots=True)
class Reranked:
    """The documents' order by the endpoint: ``(index in the request, relevance_score)``, best first;
    ``tokens`` as the endpoint counted them (0: not said)."""

    order: tuple[tuple[int, float], ...]
    model: str
    tokens: int
    type: Literal["reranked"] = "reranked"


@dataclass(frozen=True, slots=True)
class RerankFailed:
    """Why no order: ``code`` and the facts as plain values (a status, the provider's message, the host;
    never a key or a header value), for the call log and the logs."""

    code: RerankFailure
    figures: Mapping[str, Any] = field(default_factory=dict)
    type: Literal["rerank_failed"] = "rerank_failed"


RerankOutcome = Reranked | RerankFailed


@dataclass(frozen=True)
class RerankEndpoint(EndpointAccess):
    """Where and how to rerank, as plain values (the key and header values never in the repr)."""

    path: str = "/rerank"


def rerank_endpoint_of(config: EndpointSettings) -> RerankEndpoint:
    """The endpoint a model configuration describes (sync: its key and headers are decrypted here), within
    :data:`RERANK_TIMEOUT_SECONDS` and without retries."""
    settings = access_settings_of(config)
    settings["timeout"] = min(float(config.timeout), RERANK_TIMEOUT_SECONDS)
    return RerankEndpoint(**settings, max_retries=0, path=rerank_path_for(config.provider))


async def rerank_texts(
    endpoint: RerankEndpoint, query: str, documents: Sequence[str], *, top_n: int
) -> RerankOutcome:
    """The ``top_n`` best of ``documents`` for ``query`` by the endpoint, or why not."""
    if not documents:
        return Reranked(order=(), model=endpoint.model, tokens=0)
    if not endpoint.sendable():
        return RerankFailed(RerankFailure.REFUSED, {"reason": "unsendable_header"})
    top_n = max(1, min(top_n, len(documents)))
    body = {"model": endpoint.model, "query": query, "documents": list(documents), "top_n": top_n}
    content = await endpoint_post(endpoint, endpoint.llm(), endpoint.path, body)
    if isinstance(content, PostFailed):
        return _failure(content)
    try:
        return _read(content, len(documents), top_n, endpoint.model)
    except _BadAnswer as bad:
        return RerankFailed(RerankFailure.BAD_ANSWER, {"reason": bad.reason})


def _failure(failed: PostFailed) -> RerankFailed:
    figures: dict[str, Any] = {"reason": str(failed.kind), "host": failed.host}
    if failed.status is not None:
        figures["status"] = failed.status
    if failed.message:
        figures["message"] = failed.message[:300]
    code = {
        PostFailure.ADDRESS_REFUSED: RerankFailure.REFUSED,
        PostFailure.CLIENT_ERROR: RerankFailure.REFUSED,
        PostFailure.RATE_LIMITED: RerankFailure.RATE_LIMITED,
    }.get(failed.kind, RerankFailure.UNREACHABLE)
    return RerankFailed(code, figures)


class _BadAnswer(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _read(content: bytes, count: int, top_n: int, model: str) -> Reranked:
    try:
        answer = strict_json(content)
    except ValueError as exc:
        raise _BadAnswer("not_json") from exc
    results = answer.get("results") if isinstance(answer, dict) else None
    if not isinstance(results, list) or not all(isinstance(item, dict) for item in results):
        raise _BadAnswer("no_results")
    if len(results) != top_n:
        raise _BadAnswer("count")
    order: list[tuple[int, float]] = []
    for item in results:
        index, score = item.get("index"), item.get("relevance_score")
        if not _is_int(index) or not 0 <= index < count:
            raise _BadAnswer("index")
        if not _is_number(score) or not math.isfinite(score):
            raise _BadAnswer("score")
        order.append((index, float(score)))
    if len({index for index, _score in order}) != len(order):
        raise _BadAnswer("index")
    order.sort(key=lambda pair: -pair[1])  # stable: equal scores keep the endpoint's order
    answered = answer.get("model")
    return Reranked(
        order=tuple(order),
        model=answered if isinstance(answered, str) and answered else model,
        tokens=_tokens(answer),
    )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _tokens(answer: dict[str, Any]) -> int:
    """The tokens the endpoint counted: ``usage.total_tokens``, else ``meta.tokens.input_tokens``, else 0."""
    usage = answer.get("usage")
    if isinstance(usage, dict) and _is_int(usage.get("total_tokens")) and usage["total_tokens"] >= 0:
        return int(usage["total_tokens"])
    meta = answer.get("meta")
    tokens = meta.get("tokens") if isinstance(meta, dict) else None
    if isinstance(tokens, dict) and _is_int(tokens.get("input_tokens")) and tokens["input_tokens"] >= 0:
        return int(tokens["input_tokens"])
    return 0
