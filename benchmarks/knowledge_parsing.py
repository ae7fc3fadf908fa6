"""Knowledge base ingestion, the part before embedding: pages per second of reading a document into
Markdown pages and cutting them into chunks, per worker (one process, one core), and the memory a worker
needs for a large PDF.

    .venv/bin/python benchmarks/knowledge_parsing.py                  # PDF and DOCX, 200 pages; memory at 500
    .venv/bin/python benchmarks/knowledge_parsing.py --pages 20 --memory-pages 50   # smaller

The PDF is written by hand (40 lines, about 400 words, a page: the text layer a parser reads, as in an
office document's export); the DOCX has one heading and three paragraphs (about 70 words) per "page". Each
figure is the best of ``--rounds`` runs (the machine's other work only slows a run down). Memory is the
peak of what Python allocates while it reads and chunks the PDF (tracemalloc; pypdf is pure Python).
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agents.knowledge.chunking import chunk_pages  # noqa: E402
from agents.knowledge.formats import DocumentFormat  # noqa: E402
from agents.knowledge.parsing import Parsed, document_parsed  # noqa: E402
from tests.fakes.documents import docx_with_sections, pdf_with_pages  # noqa: E402

SENTENCE = "Payments over fifty thousand yuan need the approval of the finance department before release."


def pdf_document(pages: int) -> bytes:
    """``pages`` pages of 40 lines (about 400 words a page, an office document's density)."""
    return pdf_with_pages(["\n".join(f"{n}.{line} {SENTENCE}" for line in range(40)) for n in range(pages)])


def docx_document(pages: int) -> bytes:
    return docx_with_sections(
        [(f"Section {n}", [SENTENCE * 2, SENTENCE * 2, SENTENCE]) for n in range(pages)]
    )


def ingest(fmt: DocumentFormat, data: bytes) -> tuple[int, int]:
    """Read and chunk ``data``: (pages read, chunks made)."""
    parsed = document_parsed(fmt, io.BytesIO(data))
    assert isinstance(parsed, Parsed), parsed
    return parsed.page_count, len(chunk_pages(parsed.pages))


def pages_per_second(fmt: DocumentFormat, data: bytes, pages: int, rounds: int) -> tuple[float, int]:
    best = float("inf")
    chunks = 0
    for _ in range(rounds):
        started = time.process_time()
        _, chunks = ingest(fmt, data)
        best = min(best, time.process_time() - started)
    return pages / best, chunks


def peak_memory_mib(pages: int) -> float:
    """The peak of the memory Python allocates (tracemalloc) while reading and chunking a ``pages``-page
    PDF, the document's bytes not counted (pypdf and the chunker are pure Python: this is what a worker
    needs for the document beyond its own baseline)."""
    data = pdf_document(pages)
    gc.collect()
    tracemalloc.start()
    try:
        ingest(DocumentFormat.PDF, data)
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--memory-pages", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    rows = []
    for fmt, build in ((DocumentFormat.PDF, pdf_document), (DocumentFormat.DOCX, docx_document)):
        data = build(args.pages)
        rate, chunks = pages_per_second(fmt, data, args.pages, args.rounds)
        rows.append(
            {
                "format": fmt.value,
                "pages": args.pages,
                "bytes": len(data),
                "chunks": chunks,
                "pages_per_s": rate,
            }
        )
    memory = peak_memory_mib(args.memory_pages)
    if args.json:
        print(json.dumps({"rows": rows, "memory_pages": args.memory_pages, "peak_mib": memory}))
        return
    print(
        f"{'format':8}{'pages':>7}{'KiB':>8}{'chunks':>8}{'pages/s':>10}   (read + chunk, one core, best of {args.rounds})"
    )
    for row in rows:
        print(
            f"{row['format']:8}{row['pages']:>7}{row['bytes'] // 1024:>8}{row['chunks']:>8}{row['pages_per_s']:>10.0f}"
        )
    print(
        f"peak memory reading and chunking a {args.memory_pages}-page PDF: {memory:.1f} MiB (Python allocations)"
    )


if __name__ == "__main__":
    main()
