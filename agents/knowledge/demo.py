"""The demo organisation's knowledge base: the demo company's purchasing policy, in English and in
Chinese, indexed at once (no worker needed), for the Purchasing assistant to cite."""

from __future__ import annotations

from pathlib import Path

from django.core.files import File

from agents.knowledge.ingestion import document_ingest
from agents.knowledge.models import KnowledgeBase
from agents.knowledge.services import DocumentQueued, document_upload, knowledge_base_create
from platform_core.models import Organization

DEMO_KNOWLEDGE_BASE = "purchasing_policy"
DEMO_KNOWLEDGE_DESCRIPTION = (
    "The demo company's purchasing policy (采购政策): purchase orders, approvals and payment limits, "
    "supplier checks, invoices."
)
DEMO_DOCUMENTS = Path(__file__).resolve().parent / "demo_documents"


def demo_knowledge_seed(org: Organization) -> KnowledgeBase:
    """The demo knowledge base with its two documents, indexed (idempotent: a document already there is
    recognised by its content and left as it is)."""
    knowledge_base = KnowledgeBase.objects.for_org(org).filter(
        connector__name=DEMO_KNOWLEDGE_BASE
    ).first() or knowledge_base_create(
        organization=org, name=DEMO_KNOWLEDGE_BASE, description=DEMO_KNOWLEDGE_DESCRIPTION, actor=None
    )
    for path in sorted(DEMO_DOCUMENTS.glob("*.md")):
        with path.open("rb") as handle:
            uploaded = document_upload(
                knowledge_base=knowledge_base,
                name=path.name,
                content=File(handle, name=path.name),
                uploaded_by=None,
            )
        if isinstance(uploaded, DocumentQueued):
            document_ingest(uploaded.document.pk)
    return knowledge_base
