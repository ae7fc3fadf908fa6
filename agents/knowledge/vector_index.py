"""Vector search over knowledge-base passages: where their embeddings are kept and how the nearest are found.

Every database keeps a passage's vector as float32 bytes (:class:`~agents.knowledge.models.ChunkVector`).
Searching depends on the database (:func:`vector_backend`):

* SQLite (the embedded default; the platform's Python cannot load SQLite extensions): in the process. A
  knowledge base's vectors are read once into a matrix of unit rows (numpy) and ranked by one matrix
  product. Each process keeps the matrices it read (:data:`CACHE_MB_DEFAULT`, setting
  ``KNOWLEDGE_VECTOR_CACHE_MB``), and before each search compares the base's vector count and highest
  vector id with the matrix's: vectors added since are read alone and appended, any other change (a
  document deleted or replaced) reads the base again.
* PostgreSQL with pgvector: the same rows carry an ``embedding vector`` column, ranked by the server by
  cosine distance, through an HNSW index per dimension (``halfvec`` above 2,000 dimensions, pgvector's
  limit for ``vector`` indexes; none above 4,000: an exact scan), made when the first vectors of that
  dimension are stored.
* PostgreSQL without pgvector: :class:`Unavailable`, with the reason an operator can act on; vectors are
  still stored, and ``manage.py knowledge_vectors_enable`` (:func:`pgvector_enable`) makes them searchable
  once pgvector is installed. Callers search by keyword alone meanwhile.

A search only ever reads the rows of the given organisation and knowledge bases. Scores are cosine
similarities (1 is the same direction), best first.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

import numpy as np
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections, transaction
from django.db.models import Count, Max
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from agents.knowledge.models import Chunk, ChunkVector, KnowledgeBase

__all__ = [
    "CACHE_MB_DEFAULT",
    "MAX_DIMENSION",
    "InProcess",
    "PgVector",
    "Unavailable",
    "UnavailableCode",
    "VectorBackend",
    "VectorHit",
    "pgvector_enable",
    "vector_backend",
    "vector_search",
    "vectors_delete",
    "vectors_store",
]

logger = logging.getLogger(__name__)

MAX_DIMENSION = 16_000  # pgvector's limit for the ``vector`` type
CACHE_MB_DEFAULT = 1024
HNSW_VECTOR_LIMIT = 2_000  # pgvector indexes ``vector`` up to 2,000 dimensions and ``halfvec`` up to 4,000
HNSW_HALFVEC_LIMIT = 4_000
# HNSW's candidate list per search (pgvector's hnsw.ef_search, at least the limit): more finds more of the
# true nearest passages, slower. At 100,000 passages of 1,024 dimensions: 40 (pgvector's default) found 70 %
# of the exact 10 nearest, 100 found 80 % at 1.5x the time, 200 found 90 % at 2.6x (benchmarks/README.md,
# "Knowledge bases: vector search"; synthetic vectors, real embeddings fare better).
HNSW_EF_SEARCH = 100
BACKEND_CHECK_SECONDS = 60.0  # how long a process trusts what it found on PostgreSQL
STORE_BATCH = 500
LOAD_BATCH = 4096
_TABLE = ChunkVector._meta.db_table


# --- which backend --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InProcess:
    """SQLite: vectors ranked in this process (numpy)."""

    type: Literal["in_process"] = "in_process"


@dataclass(frozen=True, slots=True)
class PgVector:
    """PostgreSQL with the pgvector extension (``version`` as the server reports it)."""

    version: str
    type: Literal["pgvector"] = "pgvector"


class UnavailableCode(StrEnum):
    NOT_INSTALLABLE = "not_installable"  # the PostgreSQL server has no pgvector package
    NOT_INSTALLED = "not_installed"  # the server has it; this database has not created the extension
    NOT_ENABLED = "not_enabled"  # the extension exists; the passages' vector column does not yet
    UNSUPPORTED_DATABASE = "unsupported_database"


_REASONS: dict[UnavailableCode, Promise] = {
    UnavailableCode.NOT_INSTALLABLE: _(
        "Semantic search needs the pgvector extension, which this PostgreSQL server does not have: the "
        "operator installs it (the postgresql-NN-pgvector package), then runs “manage.py "
        "knowledge_vectors_enable”. Until then knowledge bases are searched by keyword."
    ),
    UnavailableCode.NOT_INSTALLED: _(
        "Semantic search needs the pgvector extension in this database: a PostgreSQL superuser runs "
        "“CREATE EXTENSION vector”, then the operator runs “manage.py knowledge_vectors_enable”. Until "
        "then knowledge bases are searched by keyword."
    ),
    UnavailableCode.NOT_ENABLED: _(
        "The pgvector extension is installed but the passages' vectors are not indexed yet: the operator "
        "runs “manage.py knowledge_vectors_enable”. Until then knowledge bases are searched by keyword."
    ),
    UnavailableCode.UNSUPPORTED_DATABASE: _(
        "Semantic search runs on SQLite and on PostgreSQL with pgvector only; knowledge bases are searched "
        "by keyword."
    ),
}


@dataclass(frozen=True, slots=True)
class Unavailable:
    """No vector search on this database: ``reason`` says why and what the operator can do."""

    code: UnavailableCode
    type: Literal["unavailable"] = "unavailable"

    @property
    def reason(self) -> str:
        return str(_REASONS[self.code])


VectorBackend = InProcess | PgVector | Unavailable

_backends: dict[str, tuple[float, VectorBackend]] = {}
_backends_lock = threading.Lock()


def vector_backend(*, using: str = DEFAULT_DB_ALIAS, fresh: bool = False) -> VectorBackend:
    """How this database searches vectors. On PostgreSQL the answer is read from the server and trusted
    for :data:`BACKEND_CHECK_SECONDS` (``fresh`` reads it now), so an extension installed meanwhile is
    found without a restart."""
    vendor = connections[using].vendor
    if vendor == "sqlite":
        return InProcess()
    if vendor != "postgresql":
        return Unavailable(UnavailableCode.UNSUPPORTED_DATABASE)
    now = time.monotonic()
    with _backends_lock:
        known = _backends.get(using)
    if known is not None and not fresh and now - known[0] < BACKEND_CHECK_SECONDS:
        return known[1]
    found = _pg_backend(using)
    with _backends_lock:
        _backends[using] = (now, found)
    return found


def _pg_backend(using: str) -> VectorBackend:
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
        if row is None:
            cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
            available = cursor.fetchone() is not None
            return Unavailable(
                UnavailableCode.NOT_INSTALLED if available else UnavailableCode.NOT_INSTALLABLE
            )
        cursor.execute(
            "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = %s AND column_name = 'embedding'",
            [_TABLE],
        )
        if cursor.fetchone() is None:
            return Unavailable(UnavailableCode.NOT_ENABLED)
    return PgVector(version=str(row[0]))


# --- storing --------------------------------------------------------------------------------------------


def _unit_ready(vectors: Sequence[Sequence[float]]) -> np.ndarray:
    """``vectors`` as a float32 matrix, refused (``ValueError``) unless they share one dimension and each
    is finite and not zero."""
    try:
        matrix = np.asarray(vectors, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError("vectors must share one dimension and hold numbers") from exc
    if matrix.ndim != 2 or not 1 <= matrix.shape[1] <= MAX_DIMENSION:
        raise ValueError(f"vectors must share one dimension between 1 and {MAX_DIMENSION}")
    with np.errstate(over="ignore"):
        as_float32 = matrix.astype(np.float32)
    if not np.isfinite(as_float32).all():
        raise ValueError("vectors must be finite (in float32)")
    if not np.linalg.norm(as_float32, axis=1).all():
        raise ValueError("a zero vector has no direction to compare")
    return as_float32


def vectors_store(
    *,
    organization_id: int,
    knowledge_base_id: uuid.UUID,
    vectors: Sequence[tuple[int, Sequence[float]]],
    using: str = DEFAULT_DB_ALIAS,
) -> int:
    """Store each ``(chunk id, vector)``, replacing a chunk's earlier vector; returns how many were stored.

    Every chunk must be a passage of that knowledge base of that organisation (``ValueError`` otherwise,
    nothing stored), and the vectors must share one dimension. On PostgreSQL with pgvector the
    ``embedding`` column is filled too, and the HNSW index of the dimension made if it is missing.
    """
    if not vectors:
        return 0
    chunk_ids = [int(chunk_id) for chunk_id, _vector in vectors]
    if len(set(chunk_ids)) != len(chunk_ids):
        raise ValueError("a chunk is given twice")
    matrix = _unit_ready([vector for _chunk_id, vector in vectors])
    dimension = int(matrix.shape[1])
    backend = vector_backend(using=using)
    if isinstance(backend, Unavailable) and connections[using].vendor == "postgresql":
        # Asked again rather than trusted: a vector stored without the column (pgvector enabled meanwhile)
        # would stay unsearchable until knowledge_vectors_enable ran again.
        backend = vector_backend(using=using, fresh=True)
    with transaction.atomic(using=using):
        for start in range(0, len(chunk_ids), STORE_BATCH):
            batch = chunk_ids[start : start + STORE_BATCH]
            owned = (
                Chunk.objects.using(using)
                .filter(organization_id=organization_id, knowledge_base_id=knowledge_base_id, id__in=batch)
                .count()
            )
            if owned != len(batch):
                raise ValueError("a chunk is not a passage of this knowledge base of this organisation")
            ChunkVector.objects.using(using).filter(
                organization_id=organization_id, chunk_id__in=batch
            ).delete()
        if isinstance(backend, PgVector):
            _pg_index(using, dimension)
            _pg_insert(using, organization_id, knowledge_base_id, chunk_ids, matrix)
        else:
            ChunkVector.objects.using(using).bulk_create(
                [
                    ChunkVector(
                        organization_id=organization_id,
                        knowledge_base_id=knowledge_base_id,
                        chunk_id=chunk_id,
                        dimension=dimension,
                        data=_packed(matrix[index]),
                    )
                    for index, chunk_id in enumerate(chunk_ids)
                ],
                batch_size=STORE_BATCH,
            )
    return len(chunk_ids)


def vectors_delete(
    *,
    organization_id: int,
    knowledge_base_id: uuid.UUID,
    chunk_ids: Iterable[int] | None = None,
    using: str = DEFAULT_DB_ALIAS,
) -> int:
    """Delete the knowledge base's vectors (only those of ``chunk_ids`` when given), e.g. before its
    passages are embedded again by another model. A deleted passage's vector goes with it (cascade)."""
    rows = ChunkVector.objects.using(using).filter(
        organization_id=organization_id, knowledge_base_id=knowledge_base_id
    )
    if chunk_ids is not None:
        rows = rows.filter(chunk_id__in=list(chunk_ids))
    deleted, _by_model = rows.delete()
    return deleted


def _pg_literal(vector: np.ndarray) -> str:
    """pgvector's text form of a vector: ``[x,y,...]``."""
    return "[" + ",".join(repr(x) for x in vector.tolist()) + "]"


def _packed(vector: np.ndarray) -> bytes:
    """A vector as stored: float32 little-endian."""
    return vector.astype("<f4").tobytes()


def _pg_insert(
    using: str,
    organization_id: int,
    knowledge_base_id: uuid.UUID,
    chunk_ids: Sequence[int],
    matrix: np.ndarray,
) -> None:
    """The rows with their ``embedding`` column, written at once (one statement a batch)."""
    connection = connections[using]
    base = KnowledgeBase._meta.pk.get_db_prep_value(knowledge_base_id, connection)
    dimension = int(matrix.shape[1])
    with connection.cursor() as cursor:
        for start in range(0, len(chunk_ids), STORE_BATCH):
            block = matrix[start : start + STORE_BATCH]
            cursor.execute(
                f"INSERT INTO {_TABLE} (organization_id, knowledge_base_id, chunk_id, dimension, data, embedding) "
                "SELECT %s, %s, u.chunk, %s, u.data, u.e::vector "
                "FROM unnest(%s::bigint[], %s::bytea[], %s::text[]) AS u(chunk, data, e)",
                [
                    organization_id,
                    base,
                    dimension,
                    list(chunk_ids[start : start + STORE_BATCH]),
                    [_packed(row) for row in block],
                    [_pg_literal(row) for row in block],
                ],
            )


def _pg_type(dimension: int) -> tuple[str, str | None]:
    """The type a vector of ``dimension`` is compared as, and the HNSW operator class indexing it (None:
    too long to index, searched exactly)."""
    if dimension <= HNSW_VECTOR_LIMIT:
        return f"vector({dimension})", "vector_cosine_ops"
    if dimension <= HNSW_HALFVEC_LIMIT:
        return f"halfvec({dimension})", "halfvec_cosine_ops"
    return f"vector({dimension})", None


_indexed: set[tuple[str, int]] = set()


def _pg_index(using: str, dimension: int) -> None:
    """The HNSW index of the vectors of ``dimension`` (a partial index on the cast column), made once."""
    cast, opclass = _pg_type(dimension)
    if opclass is None or (using, dimension) in _indexed:
        return
    name = f"{_TABLE}_hnsw_{dimension}"
    with connections[using].cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM pg_indexes WHERE schemaname = current_schema() AND indexname = %s", [name]
        )
        if cursor.fetchone() is None:
            # Two processes storing the first vectors of a dimension at once would both build the index.
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [name])
            # PostgreSQL builds no index in a transaction with pending deferred checks (Django's foreign
            # keys are deferred): check them now, then defer again.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(
                f"CREATE INDEX IF NOT EXISTS {name} ON {_TABLE} "
                f"USING hnsw ((embedding::{cast}) {opclass}) WHERE dimension = {dimension}"
            )
            cursor.execute("SET CONSTRAINTS ALL DEFERRED")
    _indexed.add((using, dimension))


# --- searching ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VectorHit:
    chunk_id: int
    score: float  # cosine similarity, higher is better


def vector_search(
    *,
    organization_id: int,
    knowledge_base_ids: Sequence[uuid.UUID],
    vector: Sequence[float],
    limit: int,
    using: str = DEFAULT_DB_ALIAS,
) -> list[VectorHit] | Unavailable:
    """The passages of the organisation's ``knowledge_base_ids`` nearest to ``vector``, best first (at
    most ``limit``), or :class:`Unavailable` on a database without vector search.

    Only vectors of ``vector``'s dimension are compared (a knowledge base embedded by another model has
    none); ``ValueError`` for a vector that is not finite or is zero.
    """
    backend = vector_backend(using=using)
    if isinstance(backend, Unavailable):
        return backend
    query = _unit_ready([vector])[0]
    if not knowledge_base_ids or limit <= 0:
        return []
    bases = list(dict.fromkeys(knowledge_base_ids))
    if isinstance(backend, PgVector):
        return _pg_search(using, backend, organization_id, bases, query, limit)
    query = query / np.linalg.norm(query)
    found: list[tuple[float, int]] = []
    for base in bases:
        matrix = _matrices.current(using, organization_id, base, int(query.shape[0]))
        found.extend(matrix.best(query, limit))
    found.sort(key=lambda hit: (-hit[0], hit[1]))
    return [VectorHit(chunk_id=chunk_id, score=score) for score, chunk_id in found[:limit]]


def _pgvector_version(text: str) -> tuple[int, ...]:
    parts = []
    for part in text.split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def _pg_search_sql(
    *, dimension: int, organization_id: int, base_values: Sequence[Any], query: np.ndarray, limit: int
) -> tuple[str, list[Any]]:
    """The nearest-first query of pgvector and its parameters."""
    cast, _opclass = _pg_type(dimension)
    placeholders = ", ".join(["%s"] * len(base_values))
    literal = _pg_literal(query)
    # The dimension is written into the statement (an int): the planner matches it to the partial index.
    sql = (
        f"SELECT chunk_id, 1 - (embedding::{cast} <=> %s::{cast}) AS score FROM {_TABLE} "
        f"WHERE dimension = {int(dimension)} AND organization_id = %s AND knowledge_base_id IN ({placeholders}) "
        f"AND embedding IS NOT NULL ORDER BY embedding::{cast} <=> %s::{cast} LIMIT %s"
    )
    return sql, [literal, organization_id, *base_values, literal, limit]


def _pg_search(
    using: str,
    backend: PgVector,
    organization_id: int,
    bases: list[uuid.UUID],
    query: np.ndarray,
    limit: int,
) -> list[VectorHit]:
    connection = connections[using]
    sql, params = _pg_search_sql(
        dimension=int(query.shape[0]),
        organization_id=organization_id,
        base_values=[KnowledgeBase._meta.pk.get_db_prep_value(base, connection) for base in bases],
        query=query,
        limit=limit,
    )
    with transaction.atomic(using=using), connection.cursor() as cursor:
        # HNSW hands the filter at most ef_search candidates; from pgvector 0.8 it goes on scanning until
        # the filtered rows fill the limit (iterative index scans).
        ef_search = min(max(HNSW_EF_SEARCH, limit), 1000)
        cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(ef_search)])
        if _pgvector_version(backend.version) >= (0, 8):
            cursor.execute("SELECT set_config('hnsw.iterative_scan', 'strict_order', true)")
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return [VectorHit(chunk_id=int(chunk_id), score=float(score)) for chunk_id, score in rows]


# --- the in-process matrices (SQLite) ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Matrix:
    """A knowledge base's vectors of one dimension as unit rows: the first ``count`` rows of buffers with
    room to spare, so that vectors added later are appended without copying the rest (a view of the first
    ``count`` rows never sees them)."""

    count: int
    last_id: int
    chunk_ids: np.ndarray  # int64, one per row
    rows: np.ndarray  # float32, unit rows

    @property
    def nbytes(self) -> int:
        return int(self.rows.nbytes + self.chunk_ids.nbytes)

    def best(self, query: np.ndarray, limit: int) -> list[tuple[float, int]]:
        """The ``limit`` best (score, chunk id) of this matrix, unordered."""
        total = self.count
        if not total:
            return []
        scores = self.rows[:total] @ query
        if limit < total:
            chosen = np.argpartition(-scores, limit - 1)[:limit]
        else:
            chosen = np.arange(total)
        return list(zip(scores[chosen].astype(float).tolist(), self.chunk_ids[chosen].tolist(), strict=True))


def _room(matrix: _Matrix, dimension: int, needed: int) -> _Matrix:
    """``matrix`` in buffers of at least ``needed`` rows (the same ones if they have the room)."""
    if matrix.rows.shape[0] >= needed:
        return matrix
    capacity = needed + max(256, needed // 16)
    rows = np.empty((capacity, dimension), dtype=np.float32)
    chunk_ids = np.empty(capacity, dtype=np.int64)
    rows[: matrix.count] = matrix.rows[: matrix.count]
    chunk_ids[: matrix.count] = matrix.chunk_ids[: matrix.count]
    return _Matrix(count=matrix.count, last_id=matrix.last_id, chunk_ids=chunk_ids, rows=rows)


def _empty(dimension: int) -> _Matrix:
    return _Matrix(
        count=0, last_id=0, chunk_ids=np.empty(0, dtype=np.int64), rows=np.empty((0, dimension), np.float32)
    )


class _Matrices:
    """The matrices this process read, least recently used dropped first past the memory budget."""

    def __init__(self) -> None:
        self._held: OrderedDict[tuple[Any, ...], _Matrix] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[tuple[Any, ...], threading.Lock] = {}

    def clear(self) -> None:
        with self._lock:
            self._held.clear()

    def current(self, using: str, organization_id: int, base: uuid.UUID, dimension: int) -> _Matrix:
        """The base's matrix, brought up to date with the database first."""
        key = (using, organization_id, base, dimension)
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:  # one reader per knowledge base; searches of other bases go on
            rows = ChunkVector.objects.using(using).filter(
                organization_id=organization_id, knowledge_base_id=base, dimension=dimension
            )
            now = rows.aggregate(count=Count("id"), last=Max("id"))
            count, last = int(now["count"]), int(now["last"] or 0)
            with self._lock:
                held = self._held.get(key)
            if held is not None and (held.count, held.last_id) == (count, last):
                matrix = held
            else:
                matrix = _empty(dimension)
                if held is not None and count > held.count and last > held.last_id:
                    # Appended to the rows held (those added since are all that is read), unless some
                    # were deleted too: then it is read whole.
                    appended = _read(using, organization_id, base, _room(held, dimension, count))
                    if appended.count == count:
                        matrix = appended
                if matrix.count != count:
                    matrix = _read(using, organization_id, base, _room(_empty(dimension), dimension, count))
            self._keep(key, matrix)
            return matrix

    def _keep(self, key: tuple[Any, ...], matrix: _Matrix) -> None:
        budget = int(getattr(settings, "KNOWLEDGE_VECTOR_CACHE_MB", CACHE_MB_DEFAULT)) * 2**20
        with self._lock:
            self._held[key] = matrix
            self._held.move_to_end(key)
            total = sum(held.nbytes for held in self._held.values())
            while total > budget and len(self._held) > 1:
                _key, dropped = self._held.popitem(last=False)
                total -= dropped.nbytes


def _read(using: str, organization_id: int, base: uuid.UUID, onto: _Matrix) -> _Matrix:
    """``onto`` with the base's vectors of its dimension whose id is above its ``last_id`` appended as unit
    rows (its buffers grown when they lack room)."""
    connection = connections[using]
    base_value = KnowledgeBase._meta.pk.get_db_prep_value(base, connection)
    dimension = int(onto.rows.shape[1])
    width = dimension * 4
    matrix = onto
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, chunk_id, data FROM {_TABLE} WHERE knowledge_base_id = %s AND organization_id = %s "
            "AND dimension = %s AND id > %s ORDER BY id",
            [base_value, organization_id, dimension, onto.last_id],
        )
        while batch := cursor.fetchmany(LOAD_BATCH):
            good = [row for row in batch if len(row[2]) == width]
            if len(good) != len(batch):
                logger.warning(
                    "knowledge base %s: %d stored vectors are not %d float32 values, left out",
                    base,
                    len(batch) - len(good),
                    dimension,
                    extra={"org_id": organization_id},
                )
            if not good:
                continue
            start, end = matrix.count, matrix.count + len(good)
            matrix = _room(matrix, dimension, end)  # rows stored since the count was read
            block = np.frombuffer(b"".join(bytes(row[2]) for row in good), dtype="<f4").reshape(
                len(good), dimension
            )
            norms = np.linalg.norm(block, axis=1)
            norms[norms == 0] = 1.0
            np.divide(block, norms[:, None], out=matrix.rows[start:end])
            matrix.chunk_ids[start:end] = [row[1] for row in good]
            matrix = _Matrix(
                count=end, last_id=int(good[-1][0]), chunk_ids=matrix.chunk_ids, rows=matrix.rows
            )
    return matrix


_matrices = _Matrices()


# --- enabling pgvector after the fact ---------------------------------------------------------------------


def pgvector_enable(*, using: str = DEFAULT_DB_ALIAS) -> VectorBackend:
    """Make vector search work on a PostgreSQL database migrated before pgvector was installed: create the
    extension (when this role may), add the ``embedding`` column, fill it from the stored vectors and index
    each dimension. Returns the backend found afterwards (:class:`Unavailable` if the extension cannot be
    created: its reason says who must act)."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return vector_backend(using=using, fresh=True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        if cursor.fetchone() is None:
            return vector_backend(using=using, fresh=True)
    try:
        with transaction.atomic(using=using), connection.cursor() as cursor:
            cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except DatabaseError:
        logger.warning("pgvector: this database role may not create the extension")
        return vector_backend(using=using, fresh=True)
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no ALTER TABLE with pending deferred checks
        cursor.execute(f"ALTER TABLE {_TABLE} ADD COLUMN IF NOT EXISTS embedding vector")
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")
    _indexed.difference_update({key for key in _indexed if key[0] == using})
    last = 0
    while True:
        with transaction.atomic(using=using), connection.cursor() as cursor:
            cursor.execute(
                f"SELECT id, dimension, data FROM {_TABLE} WHERE embedding IS NULL AND id > %s ORDER BY id LIMIT %s",
                [last, STORE_BATCH],
            )
            batch = cursor.fetchall()
            if not batch:
                break
            last = int(batch[-1][0])
            good = [row for row in batch if len(row[2]) == int(row[1]) * 4]
            texts = [_pg_literal(np.frombuffer(bytes(row[2]), dtype="<f4")) for row in good]
            cursor.execute(
                f"UPDATE {_TABLE} AS v SET embedding = u.e::vector "
                "FROM unnest(%s::bigint[], %s::text[]) AS u(id, e) WHERE v.id = u.id",
                [[int(row[0]) for row in good], texts],
            )
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT DISTINCT dimension FROM {_TABLE}")
        dimensions = [int(row[0]) for row in cursor.fetchall()]
    for dimension in dimensions:
        with transaction.atomic(using=using):
            _pg_index(using, dimension)
    return vector_backend(using=using, fresh=True)
