"""The rerank models of the endpoint presets (:mod:`agents.model_presets`): what an endpoint of role "rerank"
is filled with, per provider.

Every provider here answers the same request, the one Jina AI's reranker API defined and the others took
up: ``POST {base_url}/rerank`` (DashScope: ``/reranks``) with ``{"model", "query", "documents": [texts],
"top_n"}``, answered ``{"results": [{"index", "relevance_score"}, ...], ...}``, best first, ``index`` being
the document's position in the request (:mod:`agents.knowledge.rerank` reads it). Where the provider's
rerank API lives apart from its chat API, the preset's ``rerank_base_url`` says where. Each figure carries
the page it was read on; where that page did not state it, the comment says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _


@dataclass(frozen=True)
class RerankFamily:
    """A rerank model of a provider. ``max_documents``: the documents one request may carry, and
    ``max_input_tokens`` what it reads of each (query included), as documented (None: not stated)."""

    key: str
    label: str | Promise
    model: str
    max_documents: int | None
    max_input_tokens: int | None
    source: str


# https://jina.ai/reranker/ : POST https://api.jina.ai/v1/rerank, Bearer key, {"model", "query", "documents",
# "top_n"}; the answer's "results" hold "index", "relevance_score" (and the document), its "usage"
# "total_tokens". jina-reranker-v2-base-multilingual is the multilingual (Chinese included) text model; its
# limits per request are not stated on that page.
JINA_RERANKERS = (
    RerankFamily(
        "jina-reranker-v2-base-multilingual",
        "jina-reranker-v2-base-multilingual",
        "jina-reranker-v2-base-multilingual",
        None,
        None,
        "https://jina.ai/reranker/",
    ),
)

# https://docs.cohere.com/v2/docs/rerank-overview : POST https://api.cohere.ai/v2/rerank, Bearer key,
# {"model", "query", "documents": [strings], "top_n"}; the answer's "results" hold "index" and
# "relevance_score", and "meta.billed_units.search_units" instead of tokens (the platform then estimates
# the tokens). Rerank 4.0 (pro, fast) and 3.5 are single multilingual models (Chinese included); at most
# 10,000 documents a request (https://docs.cohere.com/v2/docs/reranking-best-practices); the tokens read of
# each document: not stated for these models on those pages.
COHERE_RERANKERS = (
    RerankFamily(
        "rerank-v4.0-pro",
        "Rerank 4.0 Pro",
        "rerank-v4.0-pro",
        10_000,
        None,
        "https://docs.cohere.com/v2/docs/rerank-overview",
    ),
    RerankFamily(
        "rerank-v4.0-fast",
        "Rerank 4.0 Fast",
        "rerank-v4.0-fast",
        10_000,
        None,
        "https://docs.cohere.com/v2/docs/rerank-overview",
    ),
    RerankFamily(
        "rerank-v3.5",
        "Rerank 3.5",
        "rerank-v3.5",
        10_000,
        None,
        "https://docs.cohere.com/v2/docs/rerank-overview",
    ),
)

# https://docs.qwencloud.com/api-reference/rerank/openai-rerank (and
# https://www.alibabacloud.com/help/en/model-studio/rerank): the OpenAI-compatible rerank of DashScope,
# POST https://dashscope-intl.aliyuncs.com/compatible-api/v1/reranks (note "reranks"), Bearer key,
# {"model", "query", "documents", "top_n"}, answered {"results": [{"index", "relevance_score", ...}],
# "usage": {"total_tokens"}}; qwen3-rerank only, at most 500 documents and 4,000 tokens each. The native
# text-rerank API (…/api/v1/services/rerank/text-rerank/text-rerank, with "input" and "parameters") is
# another shape, not spoken here. The same compatible path on the Beijing host (dashscope.aliyuncs.com):
# not verified in this round.
DASHSCOPE_RERANKERS = (
    RerankFamily(
        "qwen3-rerank",
        "qwen3-rerank",
        "qwen3-rerank",
        500,
        4_000,
        "https://docs.qwencloud.com/api-reference/rerank/openai-rerank",
    ),
)

# https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html#re-rank-api : /rerank, /v1/rerank and
# /v2/rerank implement Jina AI's rerank API (and Cohere's), for cross-encoder models such as
# BAAI/bge-reranker-v2-m3 (multilingual, Chinese included); top_n defaults to every document; the answer
# carries "usage": {"total_tokens"}. The model name is the served one (its Hugging Face id).
VLLM_RERANKERS = (
    RerankFamily(
        "bge-reranker-v2-m3",
        "BGE-Reranker-v2-M3",
        "BAAI/bge-reranker-v2-m3",
        None,
        None,
        "https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html#re-rank-api",
    ),
    RerankFamily(
        "vllm-rerank",
        _("Any served rerank model"),
        "",
        None,
        None,
        "https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html#re-rank-api",
    ),
)
