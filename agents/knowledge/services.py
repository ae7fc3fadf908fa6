"""Writes of knowledge bases and their documents, each org-scoped and recorded in the audit log.

A knowledge base is made with its connector (:mod:`connectors.knowledge.kind`) and its one action,
``search``, so the guard rails see its tool as any connector's. A document is stored on Django's storage
API (the file system by default, S3-compatible object storage in production) and queued for ingestion
once its row commits; an identical file is recognised by its SHA-256 (nothing is stored or indexed
twice), and a new version of a document replaces its passages only when it is indexed.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files import File
from django.core.files.storage import Storage
from django.db import transaction
from django.utils.translation import gettext_lazy as _

from agents.knowledge.base_services import refuse_wrong_access
from agents.knowledge.models import Document, DocumentStatus, KnowledgeBase, KnowledgeBaseKind
from agents.knowledge.tasks import ingestion_queue
from connectors.knowledge.kind import SEARCH_ACTION
from connectors.models import ActionSource, Connector, ConnectorAction, ConnectorKind
from connectors.outbound import validate_outbound_url
from platform_core.audit.audited import audited_delete, audited_save
from platform_core.audit.log import audit_log_write
from platform_core.models import MemberGroup, Organization
from platform_core.stored_files import stored_files_delete

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from agents.models import ModelConfig

logger = logging.getLogger(__name__)

ADMIN_ALLOW_HINT = _(
    "If the server is inside your network, add its host to the knowledge base's allowed private hosts."
)
SEARCH_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": "What to look for, in the user's words and language (a question or keywords).",
        },
        "document": {
            "type": "string",
            "description": "Optional: search only the document of this name.",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": 10,
            "description": "How many passages to return (default 5).",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}
SEARCH_DESCRIPTION = (
    "Search the knowledge base's documents for passages that answer a question.\n"
    "Each passage comes with its source (document, page, headings) and a number: cite the sources you use "
    "as [1], [2]... in your answer."
)
CHAT_FILES_SEARCH_DESCRIPTION = (
    "Search the long documents attached to this conversation (of which the messages show only the "
    "beginning) for passages that answer a question.\n"
    "Each passage comes with its source (document, page, headings) and a number: cite the sources you use "
    "as [1], [2]... in your answer."
)


def knowledge_base_create(
    *,
    organization: Organization,
    name: str,
    description: str = "",
    embedding_endpoint: ModelConfig | None = None,
    rerank_endpoint: ModelConfig | None = None,
    restricted: bool = False,
    members: Iterable[User] = (),
    groups: Iterable[MemberGroup] = (),
    is_active: bool = True,
    allowed_private_hosts: Iterable[str] = (),
    kind: KnowledgeBaseKind = KnowledgeBaseKind.LIBRARY,
    actor: User | None,
) -> KnowledgeBase:
    """A new knowledge base with its connector (active or not, the private hosts its URL documents may be
    fetched from) and search action (validated; ``ValidationError`` says what is wrong, e.g. a name taken
    by another connector, or an embedding or rerank endpoint that is not one of the organisation's of that
    role, someone who is no member of the organisation, a group of another). ``kind``: a library, or the
    organisation's chat files (``agents.attachments.indexing``)."""
    members, groups = list(members), list(groups)
    refuse_wrong_access(
        organization_id=organization.pk,
        embedding_endpoint=embedding_endpoint,
        rerank_endpoint=rerank_endpoint,
        members=members,
        groups=groups,
    )
    with transaction.atomic():
        connector = Connector(
            organization=organization,
            name=name,
            description=description,
            kind=ConnectorKind.KNOWLEDGE,
            is_active=is_active,
            allowed_private_hosts=list(allowed_private_hosts),
        )
        connector.full_clean()
        connector.save()
        ConnectorAction.objects.create(
            organization=organization,
            connector=connector,
            name=SEARCH_ACTION,
            description=(
                CHAT_FILES_SEARCH_DESCRIPTION if kind == KnowledgeBaseKind.CHAT_FILES else SEARCH_DESCRIPTION
            ),
            parameters=SEARCH_PARAMETERS,
            is_write=False,
            source=ActionSource.MANUAL,
        )
        knowledge_base = KnowledgeBase(
            organization=organization,
            kind=kind,
            connector=connector,
            embedding_endpoint=embedding_endpoint,
            rerank_endpoint=rerank_endpoint,
            restricted=restricted,
        )
        audited_save(instance=knowledge_base, actor=actor, m2m={"members": members, "groups": groups})
    return knowledge_base


def knowledge_base_delete(*, knowledge_base: KnowledgeBase, actor: User | None) -> None:
    """Delete a knowledge base, its connector, documents, passages and stored files."""
    files = list(
        Document.objects.for_org(knowledge_base.organization_id)
        .filter(knowledge_base=knowledge_base)
        .values_list("file", flat=True)
    )
    with transaction.atomic():
        connector = knowledge_base.connector
        audited_delete(instance=knowledge_base, actor=actor)
        connector.delete()
        transaction.on_commit(lambda: _files_delete(files))


@dataclass(frozen=True, slots=True)
class DocumentQueued:
    """The file is stored and waits for a worker (a new document, or a new version of one)."""

    document: Document
    replaced: bool


@dataclass(frozen=True, slots=True)
class DocumentUnchanged:
    """The knowledge base already holds this very file (same content): nothing was stored."""

    document: Document


@dataclass(frozen=True, slots=True)
class DocumentTooLarge:
    """The file is over ``KNOWLEDGE_MAX_FILE_BYTES``: nothing was stored."""

    size: int
    limit: int


DocumentUpload = DocumentQueued | DocumentUnchanged | DocumentTooLarge


def document_upload(
    *, knowledge_base: KnowledgeBase, name: str, content: File, uploaded_by: User | None
) -> DocumentUpload:
    """Store ``content`` as the document ``name`` of the knowledge base and queue its ingestion."""
    size = content.size or 0
    limit = settings.KNOWLEDGE_MAX_FILE_BYTES
    if size > limit:
        return DocumentTooLarge(size, limit)
    digest = _sha256(content)
    name = _clean_name(name)
    org_id = knowledge_base.organization_id
    with transaction.atomic():
        documents = Document.objects.for_org(org_id).select_for_update().filter(knowledge_base=knowledge_base)
        existing = documents.filter(name=name).first()
        if existing is not None and existing.sha256 == digest:
            return DocumentUnchanged(existing)
        if existing is None:
            same = documents.filter(sha256=digest).order_by("created_at").first()
            if same is not None:  # the same file under another name
                return DocumentUnchanged(same)
        old_file = existing.file.name if existing is not None else ""
        document = existing or Document(
            id=uuid.uuid4(), organization_id=org_id, knowledge_base=knowledge_base, name=name
        )
        if existing is not None:
            document.version += 1
        document.sha256 = digest
        document.size = size
        document.status = DocumentStatus.QUEUED
        document.attempts = 0
        document.failure_code = ""
        document.failure_figures = {}
        document.uploaded_by = uploaded_by
        content.seek(0)
        document.file.save(name, content, save=False)
        audited_save(instance=document, actor=uploaded_by)
        transaction.on_commit(lambda: ingestion_queue(document.pk))
        if old_file:
            transaction.on_commit(lambda: _files_delete([old_file]))
    return DocumentQueued(document, replaced=existing is not None)


@dataclass(frozen=True, slots=True)
class UrlRefused:
    """The URL may not be fetched (the SSRF guard's verdict, or not an http(s) URL): nothing was stored."""

    message: str


def document_from_url(
    *, knowledge_base: KnowledgeBase, url: str, actor: User | None
) -> DocumentQueued | UrlRefused:
    """A document fetched from ``url`` when it is indexed, now and at each re-index (a URL already in the
    knowledge base is indexed again). The URL is checked by the SSRF guard now, with the knowledge base's
    allowed private hosts, and again on every connection when it is fetched."""
    connector = knowledge_base.connector
    try:
        validate_outbound_url(
            url,
            allowed_private_hosts=list(connector.allowed_private_hosts or ()),
            allow_hint=ADMIN_ALLOW_HINT,
        )
    except ValidationError as refused:
        return UrlRefused(" ".join(str(m) for m in refused.messages))
    org_id = knowledge_base.organization_id
    with transaction.atomic():
        existing = (
            Document.objects.for_org(org_id)
            .select_for_update()
            .filter(knowledge_base=knowledge_base, source_url=url)
            .first()
        )
        if existing is not None:
            return DocumentQueued(document_reindex(document=existing, actor=actor), replaced=True)
        document = Document(
            id=uuid.uuid4(),
            organization_id=org_id,
            knowledge_base=knowledge_base,
            name=_unique_name(knowledge_base, url_document_name(url)),
            source_url=url,
            uploaded_by=actor,
        )
        audited_save(instance=document, actor=actor)
        transaction.on_commit(lambda: ingestion_queue(document.pk))
    return DocumentQueued(document, replaced=False)


def url_document_name(url: str) -> str:
    """The name a URL's document starts under: the last segment of its path, else its host."""
    parts = urlsplit(url)
    return _clean_name(unquote(PurePosixPath(parts.path).name) or parts.hostname or "document")


def _unique_name(knowledge_base: KnowledgeBase, name: str) -> str:
    taken = set(
        Document.objects.for_org(knowledge_base.organization_id)
        .filter(knowledge_base=knowledge_base)
        .values_list("name", flat=True)
    )
    if name not in taken:
        return name
    stem, dot, extension = name.rpartition(".")
    for number in range(2, 1000):
        candidate = f"{stem} ({number}).{extension}" if dot else f"{name} ({number})"
        if candidate not in taken:
            return candidate
    return f"{name} {uuid.uuid4().hex[:8]}"


def document_reindex(*, document: Document, actor: User | None) -> Document:
    """Index the document again from its stored file (a new version: any ingestion in flight is moot)."""
    with transaction.atomic():
        Document.objects.for_org(document.organization_id).filter(pk=document.pk).update(
            status=DocumentStatus.QUEUED, attempts=0, version=document.version + 1
        )
        document.refresh_from_db()
        audit_log_write(
            organization=Organization.objects.get(pk=document.organization_id),
            actor=actor,
            action="document.reindexed",
            target=document,
        )
        transaction.on_commit(lambda: ingestion_queue(document.pk))
    return document


def document_delete(*, document: Document, actor: User | None) -> None:
    """Delete the document, its passages (with their index entries) and its stored file."""
    file_name = document.file.name
    with transaction.atomic():
        audited_delete(instance=document, actor=actor)
        transaction.on_commit(lambda: _files_delete([file_name]))


def _sha256(content: File) -> str:
    digest = hashlib.sha256()
    content.seek(0)
    for block in content.chunks():
        digest.update(block)
    content.seek(0)
    return digest.hexdigest()


def _clean_name(name: str) -> str:
    """The file's own name (no folders), at most 255 characters with its extension kept."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1].strip() or "document"
    if len(base) <= 255:
        return base
    stem, dot, extension = base.rpartition(".")
    return (stem[: 255 - len(extension) - 1] + dot + extension) if dot else base[:255]


def _files_delete(names: Iterable[str]) -> None:
    """Delete stored files whose rows are gone (see :func:`platform_core.stored_files.stored_files_delete`)."""
    storage: Storage = Document._meta.get_field("file").storage  # type: ignore[attr-defined]  # FileField has it
    stored_files_delete(storage, names, kind="knowledge", log=logger)
