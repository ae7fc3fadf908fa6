"""Celery tasks of knowledge bases, the only module of the package that knows Celery: a document's
ingestion in a worker, and the sweeper (beat) that queues again what a dead worker left."""

from __future__ import annotations

import logging
import uuid

from celery import shared_task

from agents.knowledge.ingestion import Indexed, IngestRefused, document_ingest, documents_sweep

logger = logging.getLogger(__name__)


def ingestion_queue(document_id: uuid.UUID | str) -> None:
    """Queue a document's ingestion (a broker that is down is logged: the sweeper queues it again)."""
    try:
        ingest_document.delay(str(document_id))
    except Exception:
        logger.exception(
            "could not queue the ingestion of knowledge document %s; the sweeper will", document_id
        )


@shared_task(name="agents.knowledge.tasks.ingest_document", acks_late=True)
def ingest_document(document_id: str) -> str:
    """Index one document. Idempotent: a document that is no longer waiting is left alone; one whose
    worker dies is delivered again (late acknowledgement) or queued again by the sweeper."""
    outcome = document_ingest(uuid.UUID(document_id))
    if isinstance(outcome, Indexed):
        return f"indexed {outcome.chunk_count} passages"
    if isinstance(outcome, IngestRefused):
        return f"failed: {outcome.code}"
    return "nothing to do"


@shared_task(name="agents.knowledge.tasks.sweep_documents", acks_late=True)
def sweep_documents() -> dict[str, int]:
    """Queue again the documents whose ingestion stalled; fail those that stalled too often."""
    report = documents_sweep()
    for document_id in report.requeued:
        ingestion_queue(document_id)
    if report.requeued or report.failed:
        logger.warning(
            "knowledge documents: %d stalled ingestion(s) queued again, %d failed as interrupted",
            len(report.requeued),
            len(report.failed),
        )
    return {"requeued": len(report.requeued), "failed": len(report.failed)}
