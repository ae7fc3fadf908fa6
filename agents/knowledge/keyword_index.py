"""Keyword search over knowledge-base passages, in the database's own full-text index.

The index is made by migration ``agents.0013`` over ``Chunk.terms`` (the passage's search terms, already
segmented and normalised by :func:`agents.knowledge.terms.search_terms`). A question's terms are asked
for with OR, so a passage with more of them, and rarer ones, ranks first: BM25 on SQLite (FTS5),
BM25's term weighting on PostgreSQL. Only the passages of the given
knowledge bases of the given organisation are ranked.

In a large knowledge base a common term is in tens of thousands of passages, and weighing them all is
most of a search's time. So the passages looked at are those holding the question's rarest terms, as
many terms as keep them within :data:`CANDIDATE_PASSAGES` (the rarest one always), as the document
frequencies counted at indexing tell (:class:`agents.knowledge.models.DocumentTerm`, read through the
index in a millisecond). A question whose terms are all within that bound is answered over all of them,
as before; otherwise, on PostgreSQL, the common terms still add their (small) weight to the passages
looked at, while on SQLite FTS5's BM25 weighs the rare terms only.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import connection
from django.db.models import Sum

from agents.knowledge.models import MAX_COUNTED_TERM, Document, DocumentTerm

__all__ = ["CANDIDATE_PASSAGES", "KeywordHit", "keyword_search"]

MAX_QUERY_TERMS = 64
CANDIDATE_PASSAGES = 2_000


@dataclass(frozen=True, slots=True)
class KeywordHit:
    chunk_id: int
    score: float  # higher is better, on the backend's own scale


@dataclass(frozen=True, slots=True)
class TermStatistics:
    """The asked passages' count and how many of them hold each term (0: none, or not counted)."""

    passages: int
    frequencies: dict[str, int]

    def weight(self, term: str) -> float:
        """BM25's inverse document frequency of ``term``: ``ln(1 + (N - df + 0.5) / (df + 0.5))``."""
        frequency = self.frequencies.get(term, 0)
        total = max(self.passages, frequency)
        return math.log(1 + (total - frequency + 0.5) / (frequency + 0.5))


def keyword_search(
    *,
    organization_id: int,
    knowledge_base_ids: Sequence[uuid.UUID],
    terms: Sequence[str],
    limit: int,
    document_ids: Sequence[uuid.UUID] | None = None,
) -> list[KeywordHit]:
    """The passages that best match ``terms``, best first (at most ``limit``); only those of
    ``document_ids`` when given."""
    unique = list(dict.fromkeys(t for t in terms if t))[:MAX_QUERY_TERMS]
    if not unique or not knowledge_base_ids or limit <= 0 or document_ids == []:
        return []
    statistics = term_statistics(
        organization_id=organization_id,
        knowledge_base_ids=knowledge_base_ids,
        terms=unique,
        document_ids=document_ids,
    )
    looked_up = rarest_terms(unique, statistics)
    bases = [_uuid_param(kb) for kb in knowledge_base_ids]
    placeholders = ", ".join(["%s"] * len(bases))
    documents_sql = ""
    documents: list[str] = []
    if document_ids is not None:
        documents = [_uuid_param(d) for d in document_ids]
        documents_sql = f" AND c.document_id IN ({', '.join(['%s'] * len(documents))})"
    if connection.vendor == "postgresql":
        return _postgres_search(
            organization_id, bases, unique, looked_up, statistics, limit, documents_sql, documents
        )
    if connection.vendor == "sqlite":
        match = " OR ".join('"' + term.replace('"', '""') + '"' for term in looked_up)
        sql = (
            "SELECT c.id, -bm25(agents_chunk_fts) AS score FROM agents_chunk_fts "
            "JOIN agents_chunk c ON c.id = agents_chunk_fts.rowid "
            "WHERE agents_chunk_fts MATCH %s AND c.organization_id = %s "
            f"AND c.knowledge_base_id IN ({placeholders}){documents_sql} "
            "ORDER BY bm25(agents_chunk_fts), c.id LIMIT %s"
        )
        params: list[str | int] = [match, organization_id, *bases, *documents, limit]
    else:  # pragma: no cover - the platform runs on SQLite or PostgreSQL
        raise NotImplementedError(f"no keyword index on {connection.vendor}")
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [KeywordHit(chunk_id=row[0], score=float(row[1])) for row in cursor.fetchall()]


def term_statistics(
    *,
    organization_id: int,
    knowledge_base_ids: Sequence[uuid.UUID],
    terms: Sequence[str],
    document_ids: Sequence[uuid.UUID] | None = None,
) -> TermStatistics:
    """How many passages the asked knowledge bases (their ``document_ids`` when given) hold, and how
    many of them hold each of ``terms``, from the counts kept at indexing."""
    counted = [term for term in terms if len(term) <= MAX_COUNTED_TERM]
    rows = DocumentTerm.objects.for_org(organization_id).filter(
        knowledge_base_id__in=knowledge_base_ids, term__in=counted
    )
    documents = Document.objects.for_org(organization_id).filter(knowledge_base_id__in=knowledge_base_ids)
    if document_ids is not None:
        rows = rows.filter(document_id__in=document_ids)
        documents = documents.filter(pk__in=document_ids)
    frequencies = dict(rows.order_by().values("term").annotate(n=Sum("passages")).values_list("term", "n"))
    passages = documents.aggregate(n=Sum("chunk_count"))["n"] or 0
    return TermStatistics(passages=passages, frequencies=frequencies)


def rarest_terms(terms: Sequence[str], statistics: TermStatistics) -> list[str]:
    """The terms whose passages are looked at: all of them when together they are in at most
    :data:`CANDIDATE_PASSAGES` passages, else the rarest of those some passage holds that stay within it
    (the rarest always), in the order asked."""
    frequencies = [statistics.frequencies.get(term, 0) for term in terms]
    if sum(frequencies) <= CANDIDATE_PASSAGES:
        return list(terms)
    # A term no passage holds finds nothing; one too long to be counted may be in any number of them.
    held = [
        (frequency, term)
        for frequency, term in zip(frequencies, terms, strict=True)
        if frequency or len(term) > MAX_COUNTED_TERM
    ]
    chosen: set[str] = set()
    candidates = 0
    for frequency, term in sorted(held, key=lambda pair: pair[0]):
        if chosen and candidates + frequency > CANDIDATE_PASSAGES:
            break
        chosen.add(term)
        candidates += frequency
    return [term for term in terms if term in chosen]


def _uuid_param(value: uuid.UUID) -> str:
    """A UUID as the column stores it: 32 hex digits on SQLite (Django's char column), text elsewhere."""
    return value.hex if connection.vendor == "sqlite" else str(value)


def _lexeme(term: str) -> str:
    """``term`` as one quoted lexeme of a ``tsquery``."""
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def _postgres_search(
    organization_id: int,
    bases: list[str],
    terms: list[str],
    looked_up: list[str],
    statistics: TermStatistics,
    limit: int,
    documents_sql: str,
    documents: list[str],
) -> list[KeywordHit]:
    """BM25's weighting on PostgreSQL, whose own ranking weighs every term alike: each term found in a
    passage scores its inverse document frequency among the asked passages, so a rare term outweighs a
    common one; of passages that score alike the shorter ranks first (BM25's length normalisation, in
    its simplest form). The passages weighed are those holding a ``looked_up`` term (the GIN index finds
    them); every term of ``terms`` adds its weight."""
    # The stored tsvector of the passage's terms, without positions (migrations 0016, 0018), GIN-indexed.
    vector = "c.terms_tsv"
    scope = f"c.organization_id = %s AND c.knowledge_base_id IN ({', '.join(['%s'] * len(bases))})"
    any_term = " | ".join(_lexeme(term) for term in looked_up)
    score = " + ".join(
        f"CASE WHEN {vector} @@ to_tsquery('simple'::regconfig, %s) THEN %s::float8 ELSE 0 END" for _ in terms
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT c.id, ({score}) AS score FROM agents_chunk c "
            f"WHERE {vector} @@ to_tsquery('simple'::regconfig, %s) AND {scope}{documents_sql} "
            "ORDER BY score DESC, c.tokens, c.id LIMIT %s",
            [
                *(value for term in terms for value in (_lexeme(term), statistics.weight(term))),
                any_term,
                organization_id,
                *bases,
                *documents,
                limit,
            ],
        )
        return [KeywordHit(chunk_id=row[0], score=float(row[1])) for row in cursor.fetchall()]
