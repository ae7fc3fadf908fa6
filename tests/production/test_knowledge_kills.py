"""A Celery worker killed (SIGKILL, with its pool) in the middle of a document's ingestion: the document
is indexed in full by the next worker, or fails as interrupted when it kills every worker that takes it,
and is never left stuck (issue 34's acceptance, "a worker killed mid-ingestion").

Each test starts real ``celery -A platform_core worker`` processes on the session's PostgreSQL database and
Redis, with ``KNOWLEDGE_STALE_SECONDS=3``, ``KNOWLEDGE_MAX_ATTEMPTS=2`` and a media folder they share
with the process that uploads (``tests.production.knowledge_world``, which also runs the sweeper as beat's
task runs it). Their tasks go to a Celery queue of the module's own, which only these workers consume
(the session's worker never takes one). The document is a generated PDF long enough that its ingestion
takes seconds, so the kill lands while its row says ``parsing``.
"""

from __future__ import annotations

import io
import json
import select
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest

from agents.knowledge.chunking import chunk_pages
from agents.knowledge.formats import DocumentFormat
from agents.knowledge.parsing import Parsed, document_parsed
from platform_core.wiring.deploy.services import postgres_query
from platform_core.wiring.deploy.stack import ROOT, ProcessGroup, ProcessSpec, worker_spec
from tests.fakes.documents import pdf_with_pages
from tests.production.conftest import Stack
from tests.production.knowledge_world import long_pdf_pages
from tests.production.processes import kill_tree

PAGES = 100  # seconds of parsing and indexing: the kill lands well inside them
STALE_SECONDS = 3
WITHIN = 45.0  # a worker's start-up on a loaded machine, then its parsing

Row = dict[str, Any]


@dataclass
class Steps:
    """The ``knowledge_world`` process of the module: uploads and sweeps on the workers' queue."""

    popen: subprocess.Popen[str]
    log_path: Path
    ready: bool = False

    def __call__(self, step: str, **arguments: object) -> dict[str, Any]:
        self._answer()  # waits for its start-up the first time, then for nothing
        assert self.popen.stdin is not None
        self.popen.stdin.write(json.dumps({"step": step, **arguments}) + "\n")
        self.popen.stdin.flush()
        self.ready = False
        return self._answer()

    def _answer(self) -> dict[str, Any]:
        if self.ready:
            return {}
        stdout: IO[str] | None = self.popen.stdout
        assert stdout is not None
        readable, _, _ = select.select([stdout], [], [], WITHIN)
        line = stdout.readline() if readable else ""
        assert line, f"knowledge_world did not answer:\n{self.log_path.read_text()[-3000:]}"
        self.ready = True
        answer: dict[str, Any] = json.loads(line)
        return answer

    def stop(self) -> None:
        assert self.popen.stdin is not None
        self.popen.stdin.close()
        try:
            self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(timeout=10)


@dataclass
class Knowledge:
    """What the module's tests share: the workers' environment and queue, and the steps' process."""

    stack: Stack
    env: dict[str, str]
    queue: str
    log_dir: Path
    steps: Steps


@dataclass
class Ingestion:
    """One test's workers, started one after another on the module's queue, and what it reads."""

    knowledge: Knowledge
    groups: list[ProcessGroup] = field(default_factory=list)
    live: list[ProcessGroup] = field(default_factory=list)

    def worker(self) -> ProcessGroup:
        """A new worker (one pool process) consuming only the module's queue."""
        name = f"knowledge-worker-{uuid.uuid4().hex[:6]}"
        spec = worker_spec(concurrency=1, name=name)
        group = ProcessGroup(env=self.knowledge.env, log_dir=self.knowledge.log_dir)
        self.groups.append(group)
        self.live.append(group)
        group.start(ProcessSpec(name, (*spec.argv, "--queues", self.knowledge.queue)))
        return group

    def upload(self) -> str:
        """A new knowledge base with the long PDF uploaded to it (its ingestion queued): the document's id."""
        name = f"kill-{uuid.uuid4().hex[:8]}"
        org = self.knowledge.stack.world["org"]
        return str(self.knowledge.steps("upload", org=org, name=name, pages=PAGES)["document"])

    def killed_while_parsing(self, worker: ProcessGroup, document: str, attempt: int) -> None:
        """Wait until ``worker`` parses the document (attempt ``attempt``), then SIGKILL it with its pool:
        the row is left as a dead worker leaves it, ``parsing`` with no passages."""
        self.until(
            document, f"parsing #{attempt}", lambda r: (r["status"], r["attempts"]) == ("parsing", attempt)
        )
        (process,) = worker.processes
        worker.check_alive()
        self.live.remove(worker)
        kill_tree(process.pid)
        process.popen.wait(timeout=10)
        left = self.row(document)
        assert (left["status"], left["attempts"], left["chunk_count"]) == ("parsing", attempt, 0)
        assert self.passages(document) == []

    def swept_once_stale(self, document: str) -> dict[str, Any]:
        """Wait until the dead worker's row is older than the stale limit, then run the sweeper once."""
        self.until(document, "stale", lambda r: r["age"] > STALE_SECONDS + 0.2)
        return self.knowledge.steps("sweep")

    def row(self, document: str) -> Row:
        rows: list[tuple[Any, ...]] = postgres_query(
            self.knowledge.stack.database_url,
            "SELECT status, attempts, chunk_count, failure_code, failure_figures, "
            "extract(epoch FROM now() - updated_at) FROM agents_document WHERE id = %s",
            (document,),
        )
        status, attempts, chunk_count, failure_code, figures, age = rows[0]
        return {
            "status": status,
            "attempts": attempts,
            "chunk_count": chunk_count,
            "failure_code": failure_code,
            "failure_figures": figures,
            "age": float(age),  # seconds since the row last changed
        }

    def until(self, document: str, what: str, reached: Callable[[Row], bool]) -> Row:
        """The document's row once ``reached(row)`` holds (the workers tell the test nothing: poll)."""
        deadline = time.monotonic() + WITHIN
        while True:
            row = self.row(document)
            if reached(row):
                return row
            for group in self.live:
                group.check_alive()
            assert time.monotonic() < deadline, f"the document never got {what}: {row}"
            time.sleep(0.05)

    def passages(self, document: str) -> list[tuple[int, str]]:
        rows: list[tuple[Any, ...]] = postgres_query(
            self.knowledge.stack.database_url,
            "SELECT ordinal, text FROM agents_chunk WHERE document_id = %s ORDER BY ordinal, id",
            (document,),
        )
        return [(int(ordinal), str(text)) for ordinal, text in rows]


@pytest.fixture(scope="module")
def knowledge(prod_stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Knowledge]:
    folder = tmp_path_factory.mktemp("knowledge-kills")
    env = {
        **prod_stack.group.env,
        "MEDIA_ROOT": str(folder / "media"),
        "KNOWLEDGE_STALE_SECONDS": str(STALE_SECONDS),
        "KNOWLEDGE_MAX_ATTEMPTS": "2",
    }
    queue = f"knowledge-kills-{uuid.uuid4().hex[:8]}"
    log_path = folder / "knowledge_world.log"
    with log_path.open("w") as log:
        popen = subprocess.Popen(
            [sys.executable, "-m", "tests.production.knowledge_world", "--queue", queue],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
    steps = Steps(popen, log_path)
    try:
        yield Knowledge(prod_stack, env, queue, folder / "logs", steps)
    finally:
        steps.stop()


@pytest.fixture
def ingestion(stack: Stack, knowledge: Knowledge) -> Iterator[Ingestion]:
    ingestion = Ingestion(knowledge)
    try:
        yield ingestion
    finally:
        for group in ingestion.groups:
            group.stop()


def undisturbed_passages() -> list[str]:
    """The passages of the long PDF as one uninterrupted ingestion cuts them."""
    parsed = document_parsed(DocumentFormat.PDF, io.BytesIO(pdf_with_pages(long_pdf_pages(PAGES))))
    assert isinstance(parsed, Parsed)
    return [chunk.text for chunk in chunk_pages(parsed.pages)]


def test_a_worker_killed_mid_ingestion_leaves_the_document_to_the_next_worker_which_indexes_it_whole(
    ingestion: Ingestion,
):
    # given a long document whose worker is killed while it parses it
    first = ingestion.worker()
    document = ingestion.upload()
    ingestion.killed_while_parsing(first, document, attempt=1)

    # when a new worker is up and the sweeper finds the row stale
    ingestion.worker()
    assert ingestion.swept_once_stale(document) == {"requeued": 1, "failed": 0}

    # then the document ends ready, indexed once and whole, at its second attempt
    ready = ingestion.until(document, "ready", lambda r: r["status"] not in ("queued", "parsing"))
    assert (ready["status"], ready["attempts"], ready["failure_code"]) == ("ready", 2, "")
    passages = ingestion.passages(document)
    assert [ordinal for ordinal, _ in passages] == list(range(ready["chunk_count"]))
    assert [text for _, text in passages] == undisturbed_passages()
    indexed = " ".join(text for _, text in passages)
    assert all(f"page{number:04d}" in indexed for number in range(1, PAGES + 1))


def test_a_document_that_kills_every_worker_fails_as_interrupted_after_the_last_attempt(
    ingestion: Ingestion,
):
    # given a document whose worker is killed mid-parse, queued again, and whose next worker is killed too
    first = ingestion.worker()
    document = ingestion.upload()
    ingestion.killed_while_parsing(first, document, attempt=1)
    second = ingestion.worker()
    assert ingestion.swept_once_stale(document) == {"requeued": 1, "failed": 0}
    ingestion.killed_while_parsing(second, document, attempt=2)

    # when the sweeper finds it stale again, its attempts spent
    report = ingestion.swept_once_stale(document)

    # then it fails as interrupted, with no passages, and is not queued again
    assert report == {"requeued": 0, "failed": 1}
    failed = ingestion.row(document)
    assert (failed["status"], failed["attempts"], failed["chunk_count"]) == ("failed", 2, 0)
    assert (failed["failure_code"], failed["failure_figures"]) == ("interrupted", {"attempts": 2})
    assert ingestion.passages(document) == []
