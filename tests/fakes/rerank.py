"""The fake rerank model of the scripted OpenAI-compatible server (``POST …/rerank`` and ``…/reranks``).

:func:`relevance` scores a document by the share of the query's words it holds (lower-cased Latin words and
digits, Chinese characters and pairs of characters: :func:`tests.fakes.embeddings.features`), so a test can
predict the order: the document holding more of the question's words first, ties in the order sent.
:func:`rerank_answer` is Jina AI's answer for a request body (``results`` best first with ``index``,
``document`` and ``relevance_score``; ``usage.total_tokens``), which tests can alter to script a bad answer
(``malformed(json.dumps(...).encode())``).
"""

from __future__ import annotations

from typing import Any

from tests.fakes.embeddings import features


def relevance(query: str, document: str) -> float:
    """The share of the query's distinct words that ``document`` holds (0 to 1)."""
    asked = set(features(query))
    if not asked:
        return 0.0
    return round(len(asked & set(features(document))) / len(asked), 6)


def documents_of(body: dict[str, Any]) -> list[str]:
    """The texts of a rerank request (``documents``: a list of strings)."""
    given = body.get("documents")
    if isinstance(given, list) and all(isinstance(item, str) for item in given):
        return list(given)
    raise ValueError("documents must be a list of strings")


def rerank_answer(body: dict[str, Any]) -> dict[str, Any]:
    """Jina AI's answer to ``body``: the ``top_n`` (default: every) documents by :func:`relevance`, best
    first, and a usage count of about a token per four characters of the query and each document."""
    query = body.get("query")
    if not isinstance(query, str) or not query:
        raise ValueError("query must be a non-empty string")
    documents = documents_of(body)
    top_n = body.get("top_n", len(documents))
    if not isinstance(top_n, int) or top_n < 1:
        raise ValueError("top_n must be a positive integer")
    scored = sorted(
        ((index, relevance(query, text)) for index, text in enumerate(documents)),
        key=lambda pair: -pair[1],
    )
    results = [
        {"index": index, "document": {"text": documents[index]}, "relevance_score": score}
        for index, score in scored[:top_n]
    ]
    tokens = sum(max(1, (len(query) + len(text)) // 4) for text in documents)
    return {
        "model": body.get("model", "scripted-reranker"),
        "usage": {"total_tokens": tokens},
        "results": results,
    }
