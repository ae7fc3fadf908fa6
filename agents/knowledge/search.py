"""A search of knowledge bases for one user: hybrid retrieval behind the access rule. Sync (a thread).

Keyword search (:mod:`agents.knowledge.keyword_index`) ranks passages by the question's terms; when the
caller brings the question's embedding, vector search ranks them by meaning, and the two rankings are
fused by reciprocal rank fusion. Each search first narrows the asked knowledge bases to those the user
may read now, so a passage of a base the user lost access to mid-run is never returned.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from agents.knowledge.keyword_index import keyword_search
from agents.knowledge.models import Chunk, Document
from agents.knowledge.selectors import knowledge_base_readable_ids
from agents.knowledge.terms import reciprocal_rank_fusion, search_terms
from agents.knowledge.vector_index import Unavailable, vector_search

DEFAULT_LIMIT = 5
MAX_LIMIT = 10
CANDIDATES = 30  # each ranking's depth before fusion


class SearchMode(StrEnum):
    KEYWORD = "keyword"
    HYBRID = "hybrid"


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


@dataclass(frozen=True, slots=True)
class Found:
    passages: tuple[Passage, ...]
    mode: SearchMode


@dataclass(frozen=True, slots=True)
class NotReadable:
    """The user may read none of the knowledge bases asked (any more)."""


SearchOutcome = Found | NotReadable

# (organization_id, readable knowledge base ids, document ids or None, limit) -> chunk ids, best first
VectorRanking = Callable[[int, Sequence[uuid.UUID], Sequence[uuid.UUID] | None, int], Sequence[int]]


def knowledge_search(
    *,
    organization_id: int,
    user_id: int | None,
    knowledge_base_ids: Sequence[uuid.UUID],
    query: str,
    limit: int = DEFAULT_LIMIT,
    document_name: str = "",
    vector_ranking: VectorRanking | None = None,
) -> SearchOutcome:
    """The passages of the readable ones of ``knowledge_base_ids`` that best answer ``query``."""
    readable = knowledge_base_readable_ids(
        organization_id=organization_id, user_id=user_id, knowledge_base_ids=knowledge_base_ids
    )
    if not readable:
        return NotReadable()
    limit = max(1, min(int(limit), MAX_LIMIT))
    document_ids: list[uuid.UUID] | None = None
    if document_name.strip():
        document_ids = list(
            Document.objects.for_org(organization_id)
            .filter(knowledge_base_id__in=readable, name__iexact=document_name.strip())
            .values_list("pk", flat=True)
        )
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
    fused = reciprocal_rank_fusion(rankings)[: limit * 2]
    chunks = {
        chunk.pk: chunk
        for chunk in Chunk.objects.for_org(organization_id)
        .filter(pk__in=[chunk_id for chunk_id, _ in fused], knowledge_base_id__in=readable)
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
        if len(passages) == limit:
            break
    return Found(tuple(passages), SearchMode.HYBRID if vector_ranking is not None else SearchMode.KEYWORD)


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
