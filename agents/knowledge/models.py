"""Knowledge bases: an organisation's documents, cut into chunks that its agents search.

A :class:`KnowledgeBase` owns one connector of the knowledge kind (``connectors.knowledge``), its identity
to the guard rails: the connector's name is the knowledge base's name (its tool is ``<name>__search``),
its description what the model reads, its activity whether agents may search it. A :class:`Document` is
one uploaded file and its ingestion's state; its :class:`Chunk` rows are what search finds, replaced
together when the document is indexed again.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from platform_core.model_fields import optional_foreign_key
from platform_core.models import OrgOwnedModel


def document_upload_to(document: Document, filename: str) -> str:
    """``knowledge/<org>/<knowledge base>/<document>/<file name>``: one folder per document, so two files
    of the same name never meet."""
    return f"knowledge/{document.organization_id}/{document.knowledge_base_id}/{document.pk}/{filename}"


class KnowledgeBaseKind(models.TextChoices):
    """A *library* is a knowledge base its administrators fill and attach to agents. The organisation's
    *chat files* (one at most, made when first needed) index the long documents users attach in the chat,
    each searched only within its own conversation (``agents.attachments.indexing``): nobody lists,
    attaches or fills it."""

    LIBRARY = "library", _("Library")
    CHAT_FILES = "chat_files", _("Chat files")


class KnowledgeBase(OrgOwnedModel):
    """A collection of an organisation's documents, searched by the agents it is attached to."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(
        _("kind"),
        max_length=16,
        choices=KnowledgeBaseKind.choices,
        default=KnowledgeBaseKind.LIBRARY,
        editable=False,
    )
    connector = models.OneToOneField(
        "connectors.Connector",
        verbose_name=_("connector"),
        on_delete=models.CASCADE,
        related_name="knowledge_base",
        editable=False,
    )
    embedding_endpoint = optional_foreign_key(
        "agents.ModelConfig",
        _("embedding endpoint"),
        help_text=_("A model endpoint of role “embedding”. Empty: keyword search only."),
    )
    rerank_endpoint = optional_foreign_key(
        "agents.ModelConfig",
        _("rerank endpoint"),
        help_text=_(
            "A model endpoint of role “rerank”: it reorders each search's best passages. Empty: the fused "
            "ranking is kept."
        ),
    )
    embedding_model = models.CharField(_("embedding model"), max_length=200, blank=True, editable=False)
    embedding_dimension = models.PositiveIntegerField(
        _("embedding dimension"), null=True, blank=True, editable=False
    )
    restricted = models.BooleanField(
        _("only for chosen members and groups"),
        default=False,
        help_text=_(
            "On: only the members listed below, and the members of the groups listed below, get passages "
            "from it, through any agent."
        ),
    )
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        verbose_name=_("members with access"),
        blank=True,
        related_name="+",
    )
    groups = models.ManyToManyField(
        "platform_core.MemberGroup",
        verbose_name=_("groups with access"),
        blank=True,
        related_name="+",
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("knowledge base")
        verbose_name_plural = _("knowledge bases")
        ordering = ["connector__name"]
        constraints = [
            models.UniqueConstraint(
                fields=["organization"],
                condition=models.Q(kind="chat_files"),
                name="one_chat_files_base_per_organization",
            ),
        ]

    def __str__(self) -> str:
        return self.connector.name if self.connector_id else str(self.pk)


class DocumentStatus(models.TextChoices):
    QUEUED = "queued", _("Queued")
    PARSING = "parsing", _("Parsing")
    EMBEDDING = "embedding", _("Embedding")
    READY = "ready", _("Ready")
    FAILED = "failed", _("Failed")


class Document(OrgOwnedModel):
    """One file of a knowledge base and where its ingestion stands."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    knowledge_base = models.ForeignKey(
        KnowledgeBase, verbose_name=_("knowledge base"), on_delete=models.CASCADE, related_name="documents"
    )
    name = models.CharField(_("name"), max_length=255)
    file = models.FileField(_("file"), upload_to=document_upload_to, max_length=500, blank=True)
    source_url = models.URLField(
        _("source URL"),
        max_length=2000,
        blank=True,
        help_text=_("Fetched again, through the SSRF guard, each time the document is indexed."),
    )
    format = models.CharField(_("format"), max_length=16, blank=True)
    size = models.PositiveBigIntegerField(_("size (bytes)"), default=0)
    sha256 = models.CharField(_("content hash"), max_length=64, db_index=True, blank=True)
    status = models.CharField(
        _("status"), max_length=16, choices=DocumentStatus.choices, default=DocumentStatus.QUEUED
    )
    failure_code = models.CharField(_("failure"), max_length=40, blank=True)
    failure_figures = models.JSONField(_("failure details"), default=dict, blank=True)
    page_count = models.PositiveIntegerField(_("pages"), null=True, blank=True)
    chunk_count = models.PositiveIntegerField(_("chunks"), default=0)
    version = models.PositiveIntegerField(_("version"), default=1)
    attempts = models.PositiveSmallIntegerField(_("ingestion attempts"), default=0)
    uploaded_by = optional_foreign_key(settings.AUTH_USER_MODEL, _("uploaded by"))
    # A chat file's document (in the organisation's chat files) is its attachment's: read from the
    # attachment's stored file, and deleted with it.
    attachment = models.OneToOneField(
        "agents.Attachment",
        verbose_name=_("attachment"),
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="index_document",
        editable=False,
    )
    created_at = models.DateTimeField(_("uploaded at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)
    indexed_at = models.DateTimeField(_("indexed at"), null=True, blank=True)

    class Meta:
        verbose_name = _("document")
        verbose_name_plural = _("documents")
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["knowledge_base", "name"],
                condition=models.Q(attachment__isnull=True),
                name="unique_document_name",
            ),
        ]
        indexes = [models.Index(fields=["status", "updated_at"])]

    def __str__(self) -> str:
        return self.name


class Chunk(OrgOwnedModel):
    """One passage of a document as search finds and cites it. ``terms`` holds its search terms
    (:func:`agents.knowledge.terms.search_terms`, space-separated), which the keyword index reads."""

    id = models.BigAutoField(primary_key=True)
    knowledge_base = models.ForeignKey(
        KnowledgeBase, verbose_name=_("knowledge base"), on_delete=models.CASCADE, related_name="+"
    )
    document = models.ForeignKey(
        Document, verbose_name=_("document"), on_delete=models.CASCADE, related_name="chunks"
    )
    ordinal = models.PositiveIntegerField(_("position"))
    text = models.TextField(_("text"))
    heading_path = models.JSONField(_("headings"), default=list, blank=True)
    page_start = models.PositiveIntegerField(_("first page"))
    page_end = models.PositiveIntegerField(_("last page"))
    tokens = models.PositiveIntegerField(_("tokens"))
    terms = models.TextField(_("search terms"))

    class Meta:
        verbose_name = _("passage")
        verbose_name_plural = _("passages")
        ordering = ["document", "ordinal"]
        indexes = [models.Index(fields=["knowledge_base", "document"])]

    def __str__(self) -> str:
        return f"{self.document_id} #{self.ordinal}"

    @property
    def citation(self) -> dict[str, Any]:
        """Where the passage is: its document, pages and headings."""
        return {
            "document_id": str(self.document_id),
            "page_start": self.page_start,
            "page_end": self.page_end,
            "heading_path": list(self.heading_path),
        }


MAX_COUNTED_TERM = 100  # longer terms are not counted; a question's such term is taken for a rare one


class DocumentTerm(OrgOwnedModel):
    """How many of a document's passages hold a search term: the document frequencies by which keyword
    search weighs a question's terms and picks the rare ones to look passages up by
    (:mod:`agents.knowledge.keyword_index`). Written with the document's passages, in the same
    transaction, and gone with them; one document's rows are never shared with another's, so two
    documents indexed at once never wait on each other's counts."""

    id = models.BigAutoField(primary_key=True)
    knowledge_base = models.ForeignKey(
        KnowledgeBase, verbose_name=_("knowledge base"), on_delete=models.CASCADE, related_name="+"
    )
    document = models.ForeignKey(
        Document, verbose_name=_("document"), on_delete=models.CASCADE, related_name="term_counts"
    )
    term = models.CharField(_("search term"), max_length=MAX_COUNTED_TERM)
    passages = models.PositiveIntegerField(_("passages"))

    class Meta:
        verbose_name = _("document term")
        verbose_name_plural = _("document terms")
        constraints = [
            models.UniqueConstraint(fields=["document", "term"], name="agents_documentterm_unique")
        ]
        indexes = [
            models.Index(
                fields=["knowledge_base", "term"],
                include=["organization", "document", "passages"],
                name="agents_documentterm_lookup",
            )
        ]

    def __str__(self) -> str:
        return f"{self.term} ({self.passages})"


class ChunkVector(OrgOwnedModel):
    """A passage's embedding, as its knowledge base's embedding endpoint answered it.

    ``data`` holds the vector as float32 little-endian bytes on every database: SQLite searches them in the
    process (:mod:`agents.knowledge.vector_index`), and they are the portable copy from which PostgreSQL's
    ``embedding`` column (pgvector, added by migration ``agents.0014`` where the extension exists, not
    known to Django) is filled. Its own ``id`` grows with every vector written, so a knowledge base's
    count and highest id tell a process whether the vectors it holds are still current.
    """

    id = models.BigAutoField(primary_key=True)
    chunk = models.OneToOneField(
        Chunk, verbose_name=_("passage"), on_delete=models.CASCADE, related_name="vector", editable=False
    )
    knowledge_base = models.ForeignKey(
        KnowledgeBase, verbose_name=_("knowledge base"), on_delete=models.CASCADE, related_name="+"
    )
    dimension = models.PositiveSmallIntegerField(_("dimension"))
    data = models.BinaryField(_("vector"))

    class Meta:
        verbose_name = _("passage vector")
        verbose_name_plural = _("passage vectors")
        indexes = [
            models.Index(
                fields=["knowledge_base", "organization", "dimension", "id"],
                name="agents_chunkvector_version",
            )
        ]

    def __str__(self) -> str:
        return f"{self.chunk_id} ({self.dimension})"
