"""A search of knowledge bases for one user: hybrid retrieval behind the access rule, then an optional
rerank. Sync (a thread), but for the rerank, which is the caller's await.

Keyword search (:mod:`agents.knowledge.keyword_index`) ranks passages by the question's terms; when the
caller brings the question's embedding, vector search ranks them by meaning, and the two rankings are
fused by reciprocal rank fusion. Each search first narrows the asked knowledge bases to those the user
may read now, so a passage of a base the user lost access to mid-run is never returned.

When the knowledge bases searched have a rerank endpoint (:func:`rerank_endpoint_for`: all of them the
same one; bases with different ones, or some with none, are not reranked, so that no base's passages are
judged by a model its admin did not choose for it), the search returns the :func:`rerank_depth` best fused
passages and :func:`reranked` has the endpoint score them against the question: the ``limit`` it scores
best are the answer, in its order. When the endpoint fails (no answer in time, an HTTP error, an answer
that is not one score per passage asked) or a budget refuses it, the fused order is kept and the outcome
says so (:attr:`Found.rerank`).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from django.db.models import Q

from agents.knowledge.chunking import passage_with_headings
from agents.knowledge.keyword_index import keyword_search
from agents.knowledge.models import Chunk, Document, KnowledgeBase
from agents.knowledge.rerank import Reranked, RerankFailed, RerankOutcome
from agents.knowledge.selectors import LIBRARIES, knowledge_base_readable_ids
from agents.knowledge.terms import reciprocal_rank_fusion, search_terms
from agents.knowledge.usage import BudgetReached
from agents.knowledge.vector_index import Unavailable, vector_search

if TYPE_CHECKING:
    from agents.models import ModelConfig

DEFAULT_LIMIT = 5
MAX_LIMIT = 10
CANDIDATES = 30  # each ranking's depth before fusion
RERANK_DEPTH_MIN = 20  # the fused passages a rerank endpoint scores: at least this many...
RERANK_DEPTH_MAX = 40  # ...and at most this many (MAX_LIMIT * 4: 40 passages of ~400 tokens a request)
RERANK_ROLE = "rerank"  # agents.models.ModelRole.RERANK (agents.models imports this package)


class SearchMode(StrEnum):
    KEYWORD = "keyword"
    HYBRID = "hybrid"


class Rerank(StrEnum):
    """What became of a search's rerank step."""

    NONE = "none"  # the knowledge bases searched have no (common) rerank endpoint
    RERANKED = "reranked"  # the endpoint's order is the answer's
    FALLBACK = "fallback"  # the endpoint failed or a budget refused it: the fused order is kept


@dataclass(frozen=True, slots=True)
class Passage:
    """One passage found, with where it is and how it ranked (1 = best; 0 = not in that ranking)."""

    chunk_id: int
    knowledge_base_id: uuid.UUID
    document_id: uuid.UUID
    document_name: str
    heading_path: tuple[str, ...]
    page_start: int
    page_end: int
    text: str
    score: float
    keyword_rank: int
    vector_rank: int
    rerank_rank: int = 0  # its place in the rerank endpoint's order (0: not reranked)
    rerank_score: float | None = None  # the endpoint's relevance score


@dataclass(frozen=True, slots=True)
class Found:
    """The passages found, best first. ``mode``: how they were retrieved; ``rerank``: whether the rerank
    endpoint ordered them, and ``rerank_failure`` why not when it was asked and failed (a
    :class:`~agents.knowledge.rerank.RerankFailure` code, or ``budget_reached``)."""

    passages: tuple[Passage, ...]
    mode: SearchMode
    rerank: Rerank = Rerank.NONE
    rerank_failure: str = ""

    @property
    def ranking(self) -> str:
        """``keyword`` or ``hybrid``, with ``+rerank`` when the endpoint's order is the answer's."""
        return f"{self.mode}+rerank" if self.rerank == Rerank.RERANKED else str(self.mode)


@dataclass(frozen=True, slots=True)
class NotReadable:
    """The user may read none of the knowledge bases asked (any more)."""


SearchOutcome = Found | NotReadable

# (organization_id, readable knowledge base ids, document ids or None, limit) -> chunk ids, best first
VectorRanking = Callable[[int, Sequence[uuid.UUID], Sequence[uuid.UUID] | None, int], Sequence[int]]

# (question, the passages' texts, how many to keep) -> the endpoint's order, or why none (metered: the
# caller's budgets may refuse it)
RerankCall = Callable[[str, list[str], int], Awaitable[RerankOutcome | BudgetReached]]


def clamped_limit(limit: Any) -> int:
    """How many passages a search returns: ``limit`` within 1 and :data:`MAX_LIMIT`."""
    return max(1, min(int(limit), MAX_LIMIT))


def rerank_depth(limit: int) -> int:
    """How many of the best fused passages a rerank endpoint scores: four times those asked for, at least
    :data:`RERANK_DEPTH_MIN`, at most :data:`RERANK_DEPTH_MAX`."""
    return min(max(clamped_limit(limit) * 4, RERANK_DEPTH_MIN), RERANK_DEPTH_MAX)


def rerank_endpoint_for(
    *, organization_id: int, knowledge_base_ids: Sequence[uuid.UUID]
) -> ModelConfig | None:
    """The rerank endpoint of a search of ``knowledge_base_ids``: the one they all have, when it is active,
    of role "rerank" and of the organisation; else none (bases with different endpoints, or some with
    none, are searched without reranking). Sync: one query."""
    bases = list(
        KnowledgeBase.objects.for_org(organization_id)
        .filter(pk__in=list(knowledge_base_ids))
        .select_related("rerank_endpoint")
    )
    endpoints = {kb.rerank_endpoint_id for kb in bases}
    if not bases or len(endpoints) != 1 or None in endpoints:
        return None
    endpoint = bases[0].rerank_endpoint
    if endpoint is None or not endpoint.active or endpoint.role != RERANK_ROLE:
        return None
    return endpoint if endpoint.organization_id == organization_id else None


def knowledge_search(
    *,
    organization_id: int,
    user_id: int | None,
    knowledge_base_ids: Sequence[uuid.UUID],
    query: str,
    limit: int = DEFAULT_LIMIT,
    document_name: str = "",
    vector_ranking: VectorRanking | None = None,
    depth: int | None = None,
    documents: Sequence[uuid.UUID] | None = None,
    kinds: Collection[str] = LIBRARIES,
) -> SearchOutcome:
    """The passages of the readable ones of ``knowledge_base_ids`` (of ``kinds``) that best answer
    ``query``: ``limit`` of them, or ``depth`` when more are wanted (the candidates of a rerank,
    :func:`rerank_depth`); only of ``documents`` when given (a conversation's chat files)."""
    readable = knowledge_base_readable_ids(
        organization_id=organization_id, user_id=user_id, knowledge_base_ids=knowledge_base_ids, kinds=kinds
    )
    if not readable:
        return NotReadable()
    wanted = max(clamped_limit(limit), min(int(depth or 0), RERANK_DEPTH_MAX))
    document_ids = None if documents is None else list(documents)
    if document_name.strip():
        named = Document.objects.for_org(organization_id).filter(
            knowledge_base_id__in=readable, name__iexact=document_name.strip()
        )
        if document_ids is not None:
            named = named.filter(pk__in=document_ids)
        document_ids = list(named.values_list("pk", flat=True))
    keyword = [
        hit.chunk_id
        for hit in keyword_search(
            organization_id=organization_id,
            knowledge_base_ids=readable,
            terms=search_terms(query),
            limit=CANDIDATES,
            document_ids=document_ids,
        )
    ]
    rankings: list[Sequence[int]] = [keyword]
    if vector_ranking is not None:
        rankings.append(list(vector_ranking(organization_id, readable, document_ids, CANDIDATES)))
    fused = reciprocal_rank_fusion(rankings)[: wanted * 2]
    chunks = {
        chunk.pk: chunk
        for chunk in Chunk.objects.for_org(organization_id)
        .filter(
            Q(document_id__in=document_ids) if document_ids is not None else Q(),
            pk__in=[chunk_id for chunk_id, _ in fused],
            knowledge_base_id__in=readable,
        )
        .select_related("document")
    }
    passages = []
    for chunk_id, score in fused:
        chunk = chunks.get(chunk_id)
        if chunk is None:
            continue
        passages.append(
            Passage(
                chunk_id=chunk.pk,
                knowledge_base_id=chunk.knowledge_base_id,
                document_id=chunk.document_id,
                document_name=chunk.document.name,
                heading_path=tuple(chunk.heading_path),
                page_start=chunk.page_start,
                page_end=chunk.page_end,
                text=chunk.text,
                score=round(score, 6),
                keyword_rank=_rank(keyword, chunk_id),
                vector_rank=_rank(rankings[1], chunk_id) if len(rankings) > 1 else 0,
            )
        )
        if len(passages) == wanted:
            break
    return Found(tuple(passages), SearchMode.HYBRID if vector_ranking is not None else SearchMode.KEYWORD)


async def reranked(found: Found, *, query: str, limit: int, rerank: RerankCall) -> Found:
    """``found``'s passages (the best fused ones, :func:`rerank_depth` of them) scored by the rerank
    endpoint against ``query``: the ``limit`` it scores best, in its order, each with its rerank rank and
    score. When the endpoint fails or a budget refuses it, the first ``limit`` in the fused order, marked
    :attr:`Rerank.FALLBACK` with why."""
    limit = clamped_limit(limit)
    candidates = found.passages[: rerank_depth(limit)]
    if not candidates:
        return found
    texts = [passage_with_headings(p.heading_path, p.text) for p in candidates]
    answer = await rerank(query, texts, limit)
    if not isinstance(answer, Reranked):
        failure = answer.code if isinstance(answer, RerankFailed) else "budget_reached"
        return Found(candidates[:limit], found.mode, Rerank.FALLBACK, str(failure))
    passages = tuple(
        replace(candidates[index], rerank_rank=rank, rerank_score=round(score, 6))
        for rank, (index, score) in enumerate(answer.order[:limit], start=1)
    )
    return Found(passages, found.mode, Rerank.RERANKED)


def _rank(ranking: Sequence[int], chunk_id: int) -> int:
    try:
        return list(ranking).index(chunk_id) + 1
    except ValueError:
        return 0


def vector_ranking_for(vector: Sequence[float]) -> VectorRanking:
    """The ranking by meaning of ``vector`` (a question's embedding), for :func:`knowledge_search`: the
    nearest passages of the knowledge bases, only those of the given documents when the search is
    narrowed; none where the database has no vector search."""

    def rank(
        organization_id: int,
        knowledge_base_ids: Sequence[uuid.UUID],
        document_ids: Sequence[uuid.UUID] | None,
        limit: int,
    ) -> Sequence[int]:
        hits = vector_search(
            organization_id=organization_id,
            knowledge_base_ids=knowledge_base_ids,
            vector=vector,
            limit=limit if document_ids is None else limit * 4,
        )
        if isinstance(hits, Unavailable):
            return []
        ranked = [hit.chunk_id for hit in hits]
        if document_ids is None:
            return ranked
        kept = set(
            Chunk.objects.for_org(organization_id)
            .filter(pk__in=ranked, document_id__in=list(document_ids))
            .values_list("pk", flat=True)
        )
        return [chunk_id for chunk_id in ranked if chunk_id in kept][:limit]

    return rank
