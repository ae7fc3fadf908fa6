"""Keyword search over knowledge-base passages, in the database's own full-text index.

The index is made by migration ``agents.0013`` over ``Chunk.terms`` (the passage's search terms, already
segmented and normalised by :func:`agents.knowledge.terms.search_terms`). A question's terms are asked
for with OR, so a passage with more of them, and rarer ones, ranks first: BM25 on SQLite (FTS5),
BM25's term weighting on PostgreSQL (``ts_rank_cd`` breaking ties). Only the passages of the given knowledge bases of the given organisation
are ranked.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import connection

__all__ = ["KeywordHit", "keyword_search"]

MAX_QUERY_TERMS = 64


@dataclass(frozen=True, slots=True)
class KeywordHit:
    chunk_id: int
    score: float  # higher is better, on the backend's own scale


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
    bases = [_uuid_param(kb) for kb in knowledge_base_ids]
    placeholders = ", ".join(["%s"] * len(bases))
    documents_sql = ""
    documents: list[str] = []
    if document_ids is not None:
        documents = [_uuid_param(d) for d in document_ids]
        documents_sql = f" AND c.document_id IN ({', '.join(['%s'] * len(documents))})"
    if connection.vendor == "postgresql":
        return _postgres_search(organization_id, bases, unique, limit, documents_sql, documents)
    if connection.vendor == "sqlite":
        match = " OR ".join('"' + term.replace('"', '""') + '"' for term in unique)
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
    limit: int,
    documents_sql: str,
    documents: list[str],
) -> list[KeywordHit]:
    """BM25's weighting on PostgreSQL, whose own ranking weighs every term alike: each term found in a
    passage scores its inverse document frequency among the asked knowledge bases' passages
    (``ln(1 + (N - df + 0.5) / (df + 0.5))``), so a rare term outweighs a common one; ``ts_rank_cd``
    breaks ties. The frequencies come from one count over the passages that match any term (the GIN
    index finds them)."""
    vector = "c.terms_tsv"  # the stored tsvector of the passage's terms (migration 0016), GIN-indexed
    scope = f"c.organization_id = %s AND c.knowledge_base_id IN ({', '.join(['%s'] * len(bases))})"
    any_term = " | ".join(_lexeme(term) for term in terms)
    counts = ", ".join(
        f"count(*) FILTER (WHERE {vector} @@ to_tsquery('simple'::regconfig, %s))" for _ in terms
    )
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM agents_chunk c WHERE {scope}", [organization_id, *bases])
        (total,) = cursor.fetchone()
        cursor.execute(
            f"SELECT {counts} FROM agents_chunk c WHERE {scope} "
            f"AND {vector} @@ to_tsquery('simple'::regconfig, %s)",
            [*(_lexeme(term) for term in terms), organization_id, *bases, any_term],
        )
        frequencies = cursor.fetchone()
        weights = [math.log(1 + (total - df + 0.5) / (df + 0.5)) for df in frequencies]
        present = [(term, weight) for term, weight, df in zip(terms, weights, frequencies, strict=True) if df]
        if not present:
            return []
        score = " + ".join(
            f"CASE WHEN {vector} @@ to_tsquery('simple'::regconfig, %s) THEN %s ELSE 0 END" for _ in present
        )
        cursor.execute(
            f"SELECT c.id, ({score}) AS score, ts_rank_cd({vector}, q) AS tie "
            "FROM agents_chunk c, to_tsquery('simple'::regconfig, %s) q "
            f"WHERE {vector} @@ q AND {scope}{documents_sql} "
            "ORDER BY score DESC, tie DESC, c.id LIMIT %s",
            [
                *(value for term, weight in present for value in (_lexeme(term), weight)),
                any_term,
                organization_id,
                *bases,
                *documents,
                limit,
            ],
        )
        return [KeywordHit(chunk_id=row[0], score=float(row[1])) for row in cursor.fetchall()]
