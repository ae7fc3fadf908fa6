"""Keyword search over knowledge-base passages, in the database's own full-text index.

The index is made by migration ``agents.0013`` over ``Chunk.terms`` (the passage's search terms, already
segmented and normalised by :func:`agents.knowledge.terms.search_terms`). A question's terms are asked
for with OR, so a passage with more of them, and rarer ones, ranks first: BM25 on SQLite (FTS5),
``ts_rank_cd`` on PostgreSQL. Only the passages of the given knowledge bases of the given organisation
are ranked.
"""

from __future__ import annotations

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
        query = " | ".join("'" + term.replace("'", "''").replace("\\", "\\\\") + "'" for term in unique)
        sql = (
            "SELECT c.id, ts_rank_cd(to_tsvector('simple'::regconfig, c.terms), q) AS score "
            "FROM agents_chunk c, to_tsquery('simple'::regconfig, %s) q "
            "WHERE to_tsvector('simple'::regconfig, c.terms) @@ q "
            f"AND c.organization_id = %s AND c.knowledge_base_id IN ({placeholders}){documents_sql} "
            "ORDER BY score DESC, c.id LIMIT %s"
        )
        params: list[str | int] = [query, organization_id, *bases, *documents, limit]
    elif connection.vendor == "sqlite":
        match = " OR ".join('"' + term.replace('"', '""') + '"' for term in unique)
        sql = (
            "SELECT c.id, -bm25(agents_chunk_fts) AS score FROM agents_chunk_fts "
            "JOIN agents_chunk c ON c.id = agents_chunk_fts.rowid "
            "WHERE agents_chunk_fts MATCH %s AND c.organization_id = %s "
            f"AND c.knowledge_base_id IN ({placeholders}){documents_sql} "
            "ORDER BY bm25(agents_chunk_fts), c.id LIMIT %s"
        )
        params = [match, organization_id, *bases, *documents, limit]
    else:  # pragma: no cover - the platform runs on SQLite or PostgreSQL
        raise NotImplementedError(f"no keyword index on {connection.vendor}")
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [KeywordHit(chunk_id=row[0], score=float(row[1])) for row in cursor.fetchall()]


def _uuid_param(value: uuid.UUID) -> str:
    """A UUID as the column stores it: 32 hex digits on SQLite (Django's char column), text elsewhere."""
    return value.hex if connection.vendor == "sqlite" else str(value)
