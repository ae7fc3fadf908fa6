"""A document's ingestion: its file checked, parsed, cut into passages and indexed. Sync (a Celery worker).

Each step is written before it starts (``parsing``, then ``embedding`` when the knowledge base has an
embedding endpoint), with the attempt counted, so a worker killed mid-document leaves a row the sweeper
(:func:`documents_sweep`) finds by its age and queues again, and a document that kills its workers every
time fails after ``KNOWLEDGE_MAX_ATTEMPTS`` instead of looping. Nothing is written to the index until the
end: the new passages replace the old ones, and the document turns ``ready``, in one transaction, so a
search sees the old version or the new one, never half of either. Every way a file can be wrong ends
``failed`` with a code (:mod:`agents.knowledge.failures`), never an exception out of the task.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from dataclasses import dataclass
from datetime import timedelta
from pathlib import PurePosixPath
from typing import Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.core.files import File
from django.db import transaction
from django.utils import timezone

from agents.knowledge.chunking import chunk_pages, passage_with_headings
from agents.knowledge.embeddings import Embedded, EmbeddingFailed, embed_texts_sync
from agents.knowledge.failures import IngestFailure
from agents.knowledge.fetching import FetchFailed, url_fetched
from agents.knowledge.formats import Accepted, FileLimits, file_checked
from agents.knowledge.models import Chunk, ChunkVector, Document, DocumentStatus, KnowledgeBase
from agents.knowledge.parsing import ParseFailed, ParseLimits, document_parsed
from agents.knowledge.term_counts import document_terms_replace
from agents.knowledge.terms import search_terms
from agents.knowledge.usage import BudgetReached, EmbeddingPayer, embedding_metered_sync
from agents.knowledge.vector_index import vectors_store
from connectors.models import Connector

logger = logging.getLogger(__name__)

WORKING = (DocumentStatus.QUEUED, DocumentStatus.PARSING, DocumentStatus.EMBEDDING)


@dataclass(frozen=True, slots=True)
class Indexed:
    """The document is ready: its passages replaced the old ones."""

    document_id: uuid.UUID
    chunk_count: int


@dataclass(frozen=True, slots=True)
class IngestRefused:
    """The document failed with ``code``; the admin reads why."""

    document_id: uuid.UUID
    code: str


@dataclass(frozen=True, slots=True)
class NotToIngest:
    """Nothing to do: the document is gone, ready or failed (a repeated or stale task)."""

    document_id: uuid.UUID


IngestOutcome = Indexed | IngestRefused | NotToIngest


def document_ingest(document_id: uuid.UUID) -> IngestOutcome:
    """Index one document of any organisation (the task knows only its id), from its stored file."""
    document = _claimed(document_id)
    if document is None:
        return NotToIngest(document_id)
    try:
        return _ingest(document)
    except Exception:
        logger.exception("knowledge document %s could not be indexed", document_id)
        return _failed(document, IngestFailure.INTERNAL)


def _claimed(document_id: uuid.UUID) -> Document | None:
    """The document, now ``parsing`` with its attempt counted, or ``None`` when it is not to be indexed
    (any organisation: addressed by the id the platform queued)."""
    with transaction.atomic():
        document = (
            Document.objects.unscoped()  # a worker's task addresses the document by the id it was queued with
            .select_for_update()
            .filter(pk=document_id, status__in=WORKING)
            .first()
        )
        if document is None:
            return None
        document.status = DocumentStatus.PARSING
        document.attempts += 1
        document.save(update_fields=["status", "attempts", "updated_at"])
    return document


def _ingest(document: Document) -> IngestOutcome:
    limits = FileLimits(
        max_bytes=settings.KNOWLEDGE_MAX_FILE_BYTES, max_unpacked=settings.KNOWLEDGE_MAX_UNPACKED_BYTES
    )
    if document.source_url:
        refreshed = _fetched_again(document)
        if refreshed is not None:
            return refreshed
    # A chat file's document is read from its attachment's stored file.
    stored = document.attachment.file if document.attachment is not None else document.file
    try:
        file = stored.open("rb")
        size = stored.size
    except (FileNotFoundError, OSError, ValueError):  # ValueError: an attachment without its file
        return _failed(document, IngestFailure.FILE_MISSING)
    with file:
        # A URL's document is read as what its server sent (the stored file's name has its extension).
        named = PurePosixPath(document.file.name).name if document.source_url else document.name
        checked = file_checked(named, file, size, limits)
        if not isinstance(checked, Accepted):
            return _failed(document, checked.code, checked.figures)
        parsed = document_parsed(checked.format, file, ParseLimits(max_pages=settings.KNOWLEDGE_MAX_PAGES))
    if isinstance(parsed, ParseFailed):
        return _failed(document, parsed.code, parsed.figures, format=checked.format)
    chunks = chunk_pages(parsed.pages)
    if not chunks:
        return _failed(document, IngestFailure.NO_PASSAGES, format=checked.format)
    knowledge_base = (
        KnowledgeBase.objects.for_org(document.organization_id)
        .select_related("embedding_endpoint")
        .get(pk=document.knowledge_base_id)
    )
    embedded = None
    endpoint = knowledge_base.embedding_endpoint
    if endpoint is not None and endpoint.active:
        _working(document, DocumentStatus.EMBEDDING)
        texts = [passage_with_headings(c.heading_path, c.text) for c in chunks]
        outcome = embedding_metered_sync(
            EmbeddingPayer(document.organization_id),
            endpoint,
            texts,
            lambda: embed_texts_sync(endpoint, texts, dimension=knowledge_base.embedding_dimension),
        )
        if isinstance(outcome, BudgetReached):
            return _failed(
                document, IngestFailure.BUDGET_REACHED, {"budget": outcome.budget}, format=checked.format
            )
        if isinstance(outcome, EmbeddingFailed):
            figures = {"endpoint": endpoint.name, "detail": outcome.detail[:300]}
            return _failed(document, f"embedding_{outcome.code}", figures, format=checked.format)
        embedded = outcome
    rows = [
        Chunk(
            organization_id=document.organization_id,
            knowledge_base_id=document.knowledge_base_id,
            document_id=document.pk,
            ordinal=ordinal,
            text=chunk.text,
            heading_path=list(chunk.heading_path),
            page_start=chunk.page_start,
            page_end=chunk.page_end,
            tokens=chunk.tokens,
            terms=" ".join(search_terms(" ".join((*chunk.heading_path, chunk.text)))),
        )
        for ordinal, chunk in enumerate(chunks)
    ]
    with transaction.atomic():
        current = (
            Document.objects.for_org(document.organization_id)
            .select_for_update()
            .filter(pk=document.pk, status__in=WORKING, version=document.version)
            .first()
        )
        if current is None:  # deleted, or a newer version arrived while this one was parsed
            return NotToIngest(document.pk)
        Chunk.objects.for_org(document.organization_id).filter(document_id=document.pk).delete()
        Chunk.objects.bulk_create(rows, batch_size=500)
        document_terms_replace(document=current, passage_terms=(row.terms for row in rows))
        if embedded is not None:
            _vectors_kept(knowledge_base, rows, embedded)
        current.status = DocumentStatus.READY
        current.format = checked.format.value
        current.page_count = parsed.page_count
        current.chunk_count = len(rows)
        current.failure_code = ""
        current.failure_figures = {}
        current.indexed_at = timezone.now()
        current.save()
    return Indexed(document.pk, len(rows))


def _fetched_again(document: Document) -> IngestOutcome | None:
    """Fetch a URL's document again (through the SSRF guard, with the knowledge base's allowed private
    hosts) and store what it answers as the document's file; ``None`` to go on indexing it. The same
    content as the indexed one ends the ingestion at once, ready; a failed fetch fails the document with
    its reason (its passages stay searchable until it is replaced or deleted)."""
    allowed = (
        Connector.objects.for_org(document.organization_id)
        .filter(knowledge_base__pk=document.knowledge_base_id)
        .values_list("allowed_private_hosts", flat=True)
        .first()
    )
    fetched = async_to_sync(url_fetched)(
        document.source_url,
        allowed_private_hosts=list(allowed or ()),
        max_bytes=settings.KNOWLEDGE_MAX_FILE_BYTES,
    )
    if isinstance(fetched, FetchFailed):
        return _failed(document, fetched.code, fetched.figures)
    with fetched.file:
        digest = hashlib.sha256()
        for block in iter(lambda: fetched.file.read(1024 * 1024), b""):
            digest.update(block)
        fetched.file.seek(0)
        if (
            digest.hexdigest() == document.sha256
            and document.chunk_count
            and document.indexed_at
            and _embedded_as_needed(document)
        ):
            updated = (
                Document.objects.for_org(document.organization_id)
                .filter(pk=document.pk, version=document.version, status__in=WORKING)
                .update(
                    status=DocumentStatus.READY,
                    failure_code="",
                    failure_figures={},
                    updated_at=timezone.now(),
                )
            )
            return Indexed(document.pk, document.chunk_count) if updated else NotToIngest(document.pk)
        old_file = document.file.name
        document.file.save(fetched.name, File(fetched.file, name=fetched.name), save=False)
    document.sha256, document.size = digest.hexdigest(), fetched.size
    Document.objects.for_org(document.organization_id).filter(pk=document.pk).update(
        file=document.file.name, sha256=document.sha256, size=document.size, updated_at=timezone.now()
    )
    if old_file and old_file != document.file.name:
        document.file.storage.delete(old_file)
    return None


def _embedded_as_needed(document: Document) -> bool:
    """Whether the document's passages have the vectors its knowledge base needs (none without an
    active embedding endpoint; else one per passage): unchanged content is then ready at once."""
    endpoint_active = (
        KnowledgeBase.objects.for_org(document.organization_id)
        .filter(
            pk=document.knowledge_base_id, embedding_endpoint__isnull=False, embedding_endpoint__active=True
        )
        .exists()
    )
    if not endpoint_active:
        return True
    vectors = (
        ChunkVector.objects.for_org(document.organization_id).filter(chunk__document_id=document.pk).count()
    )
    return vectors == document.chunk_count


def _working(document: Document, status: str) -> None:
    """Say which step the document is at (and that its worker is alive: the sweeper reads the time)."""
    Document.objects.for_org(document.organization_id).filter(pk=document.pk).update(
        status=status, updated_at=timezone.now()
    )


def _vectors_kept(knowledge_base: KnowledgeBase, rows: list[Chunk], embedded: Embedded) -> None:
    """Store the new passages' vectors, and the model and dimension the knowledge base is embedded with
    (set by its first document; a later document must match them, which the embedding call checked)."""
    vectors_store(
        organization_id=knowledge_base.organization_id,
        knowledge_base_id=knowledge_base.pk,
        vectors=[(row.pk, vector) for row, vector in zip(rows, embedded.vectors, strict=True)],
    )
    if knowledge_base.embedding_dimension is None:
        KnowledgeBase.objects.for_org(knowledge_base.organization_id).filter(
            pk=knowledge_base.pk, embedding_dimension__isnull=True
        ).update(embedding_model=embedded.model[:200], embedding_dimension=embedded.dimension)


def _failed(
    document: Document, code: str, figures: dict[str, Any] | None = None, *, format: str = ""
) -> IngestOutcome:
    """Mark the document failed with ``code`` (its old passages stay searchable until it is replaced or
    deleted: a bad new version does not take a good old one away)."""
    updated = (
        Document.objects.for_org(document.organization_id)
        .filter(pk=document.pk, version=document.version, status__in=WORKING)
        .update(
            status=DocumentStatus.FAILED,
            failure_code=str(code),
            failure_figures=dict(figures or {}),
            format=format or document.format,
            updated_at=timezone.now(),
        )
    )
    return IngestRefused(document.pk, str(code)) if updated else NotToIngest(document.pk)


@dataclass(frozen=True, slots=True)
class SweepReport:
    requeued: tuple[uuid.UUID, ...]
    failed: tuple[uuid.UUID, ...]


def documents_sweep(*, now: Any = None) -> SweepReport:
    """Find documents whose ingestion stalled (no progress for ``KNOWLEDGE_STALE_SECONDS``): those with
    attempts left are returned to be queued again, the others fail as interrupted. Every organisation's
    (the sweeper serves them all)."""
    now = now or timezone.now()
    stale_before = now - timedelta(seconds=settings.KNOWLEDGE_STALE_SECONDS)
    requeued: list[uuid.UUID] = []
    failed: list[uuid.UUID] = []
    with transaction.atomic():
        stalled = (
            Document.objects.unscoped()  # the sweeper serves every organisation
            .select_for_update()
            .filter(status__in=WORKING, updated_at__lt=stale_before)
        )
        for document in stalled:
            if document.attempts >= settings.KNOWLEDGE_MAX_ATTEMPTS:
                document.status = DocumentStatus.FAILED
                document.failure_code = IngestFailure.INTERRUPTED
                document.failure_figures = {"attempts": document.attempts}
                failed.append(document.pk)
            else:
                document.status = DocumentStatus.QUEUED
                requeued.append(document.pk)
            document.save(update_fields=["status", "failure_code", "failure_figures", "updated_at"])
    return SweepReport(tuple(requeued), tuple(failed))
