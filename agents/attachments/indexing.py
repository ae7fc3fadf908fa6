"""Long attached documents, indexed for search within their conversation.

A document longer than a message shows (:data:`agents.attachments.reading.INLINE_CHARACTERS`) is also
ingested, at upload, by the knowledge bases' pipeline into the organisation's *chat files*: a knowledge
base of its own kind (:class:`~agents.knowledge.models.KnowledgeBaseKind`), made with its connector the
first time one is needed. Its documents are their attachments' (read from the attachment's stored file,
deleted with the attachment), and a run searches only those of its own conversation
(:mod:`agents.attachments.search`). The connector is how the guard rails see that search: the call log
records it, and its administrators can rate-limit it, hold it for approval or switch it off, as any
connector's.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from agents.attachments.models import Attachment, AttachmentKind, TextShown
from agents.knowledge.models import Document, KnowledgeBase, KnowledgeBaseKind
from agents.knowledge.services import knowledge_base_create
from agents.knowledge.tasks import ingestion_queue
from connectors.selectors import connector_name_free
from platform_core.models import Organization

__all__ = ["CHAT_FILES_NAME", "attachment_index", "chat_files_base"]

CHAT_FILES_NAME = "chat_files"
"""The chat files' connector name (its tool is ``chat_files__search``), or with a number after it when
the organisation already has a connector of that name."""


def chat_files_base(organization: Organization) -> KnowledgeBase:
    """The organisation's chat files, made (with their connector, active) the first time."""
    found = _chat_files(organization)
    if found is not None:
        return found
    try:
        with transaction.atomic():
            return knowledge_base_create(
                organization=organization,
                name=connector_name_free(organization, CHAT_FILES_NAME),
                description=_("The files users attach in the chat, each searched within its conversation."),
                kind=KnowledgeBaseKind.CHAT_FILES,
                actor=None,
            )
    except IntegrityError:  # another upload of the organisation made them meanwhile
        made = _chat_files(organization)
        if made is None:
            raise
        return made


def attachment_index(attachment: Attachment) -> Document | None:
    """Queue the indexing of an upload whose text is longer than its message shows (``None``: shown
    whole, an image, or without text). Call it once the attachment's row is committed."""
    if attachment.kind != AttachmentKind.DOCUMENT or attachment.text_shown != TextShown.CUT:
        return None
    organization = Organization.objects.get(pk=attachment.organization_id)
    knowledge_base = chat_files_base(organization)
    with transaction.atomic():
        document = Document.objects.create(
            organization=organization,
            knowledge_base=knowledge_base,
            attachment=attachment,
            name=attachment.name,
            format=attachment.format,
            size=attachment.size,
            sha256=attachment.sha256,
            uploaded_by_id=attachment.uploaded_by_id,
        )
        transaction.on_commit(lambda: ingestion_queue(document.pk))
    return document


def _chat_files(organization: Organization) -> KnowledgeBase | None:
    return (
        KnowledgeBase.objects.for_org(organization)
        .filter(kind=KnowledgeBaseKind.CHAT_FILES)
        .select_related("connector")
        .first()
    )
