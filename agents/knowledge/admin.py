"""The admin of knowledge bases and their documents.

A knowledge base's page sets its name, description and activity (its connector's, the guard rails'
identity of its search tool), its embedding and rerank endpoints and who may read it, takes several files at once
(stored and queued by :func:`agents.knowledge.services.document_upload`, each outcome reported), and lists
its documents with where their ingestion stands and, for a failed one, why, in the admin's language.
The documents' own list re-indexes or deletes them through the same services.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.defaultfilters import filesizeformat
from django.urls import reverse
from django.utils.html import conditional_escape, format_html
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agents.knowledge.base_services import groups_error, knowledge_base_update, members_error
from agents.knowledge.failures import failure_message
from agents.knowledge.models import Document, DocumentStatus, KnowledgeBase, KnowledgeBaseKind
from agents.knowledge.services import (
    DocumentQueued,
    DocumentTooLarge,
    DocumentUnchanged,
    UrlRefused,
    document_delete,
    document_from_url,
    document_reindex,
    document_upload,
    knowledge_base_create,
    knowledge_base_delete,
)
from agents.knowledge.vector_index import Unavailable, vector_backend
from agents.models import ModelConfig, ModelRole
from connectors.forms import HostListField
from connectors.models import Connector, connector_name_validator
from platform_core.admin.base import AuditedAdmin, OrgScopedAdmin, OrgScopedInline
from platform_core.request_meta import client_ip, signed_in_user

# What the documents' pages show, all read-only: a document changes only through the services.
INLINE_FIELDS = ("name", "status_shown", "pages", "chunk_count", "size_shown", "updated_at")
DOCUMENT_FIELDS = (
    "name",
    "knowledge_base",
    "status_shown",
    "format",
    "size_shown",
    "page_count",
    "chunk_count",
    "sha256",
    "version",
    "source_url",
    "uploaded_by",
    "created_at",
    "indexed_at",
    "download",
)


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files in one input (Django's documented pattern for ``multiple`` uploads)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput(attrs={"multiple": True}))
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> Any:
        single = super().clean
        if isinstance(data, list | tuple):
            return [single(item, initial) for item in data]
        return [single(data, initial)] if data else []


class KnowledgeBaseForm(forms.ModelForm):
    name = forms.CharField(
        label=_("name"),
        max_length=40,
        validators=[connector_name_validator],
        help_text=_("Short identifier such as 'policies'; agents search it with the tool '<name>__search'."),
    )
    description = forms.CharField(
        label=_("description"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_("What the documents are about; the agent reads it to decide when to search."),
    )
    active = forms.BooleanField(
        label=_("active"), required=False, initial=True, help_text=_("Off: no agent searches it.")
    )
    add_url = forms.URLField(
        label=_("Add a document from a URL"),
        required=False,
        max_length=2000,
        assume_scheme="https",
        help_text=_(
            "Fetched through the SSRF guard when it is indexed, and again at each re-index (an intranet page, "
            "a file on a file server)."
        ),
    )
    allowed_private_hosts = HostListField(
        label=_("Allowed private hosts"),
        required=False,
        help_text=_(
            "One host name or IP address per line: the servers inside your network that documents may be "
            "fetched from."
        ),
    )
    upload = MultipleFileField(
        label=_("Add documents"),
        required=False,
        help_text=_(
            "PDF, DOCX, XLSX, CSV, PPTX, Markdown, HTML or plain text; several at once. A file with the "
            "name of a document replaces it once indexed; an identical file is recognised and skipped."
        ),
    )

    class Meta:
        model = KnowledgeBase
        fields = ["organization", "embedding_endpoint", "rerank_endpoint", "restricted", "members", "groups"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        connector = self.instance.connector if self.instance.connector_id else None
        if connector is not None:
            self.fields["name"].initial = connector.name
            self.fields["description"].initial = connector.description
            self.fields["active"].initial = connector.is_active
            self.fields["allowed_private_hosts"].initial = connector.allowed_private_hosts
        # The admin prints help texts as HTML; ours are plain text ("'<name>__search'" must show).
        for field in self.fields.values():
            field.help_text = conditional_escape(field.help_text)
        for name, role in (
            ("embedding_endpoint", ModelRole.EMBEDDING),
            ("rerank_endpoint", ModelRole.RERANK),
        ):
            if name in self.fields:
                field = self.fields[name]
                field.queryset = field.queryset.filter(role=role)  # type: ignore[attr-defined]  # a ModelChoiceField

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        organization = cleaned.get("organization") or (
            self.instance.organization if self.instance.organization_id else None
        )
        name = cleaned.get("name")
        if organization is not None and name:
            taken = Connector.objects.for_org(organization).filter(name=name)
            if self.instance.connector_id:
                taken = taken.exclude(pk=self.instance.connector_id)
            if taken.exists():
                self.add_error("name", _("A connector or knowledge base of this organisation has this name."))
        for name in ("embedding_endpoint", "rerank_endpoint"):
            endpoint: ModelConfig | None = cleaned.get(name)
            if (
                endpoint is not None
                and organization is not None
                and endpoint.organization_id != organization.pk
            ):
                self.add_error(name, _("Choose an endpoint of this organisation."))
        if organization is not None:
            for name, problem in (
                (
                    "members",
                    members_error(organization_id=organization.pk, members=cleaned.get("members") or ()),
                ),
                ("groups", groups_error(organization_id=organization.pk, groups=cleaned.get("groups") or ())),
            ):
                if problem:
                    self.add_error(name, problem)
        return cleaned


class DocumentInline(OrgScopedInline):
    model = Document
    fk_name = "knowledge_base"
    extra = 0
    can_delete = False
    show_change_link = False
    fields = INLINE_FIELDS
    readonly_fields = INLINE_FIELDS
    ordering = ["name"]
    verbose_name_plural = _("documents (re-index or delete them under Documents)")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description=_("status"))
    def status_shown(self, obj: Document) -> str:
        # data-status: the admin's script refreshes the list while a document is being indexed
        return format_html('<span data-status="{}">{}</span>', obj.status, document_status_text(obj))

    @admin.display(description=_("pages"))
    def pages(self, obj: Document) -> str:
        return "" if obj.page_count is None else str(obj.page_count)

    @admin.display(description=_("size"))
    def size_shown(self, obj: Document) -> str:
        return filesizeformat(obj.size)


def document_status_text(document: Document) -> str:
    """The document's status, and for a failed one why (in the active language)."""
    status = str(DocumentStatus(document.status).label)
    if document.status == DocumentStatus.FAILED:
        return f"{status}: {failure_message(document.failure_code, document.failure_figures)}"
    return status


@admin.register(KnowledgeBase)
class KnowledgeBaseAdmin(AuditedAdmin):
    form = KnowledgeBaseForm
    change_form_template = "admin/agents/knowledgebase/change_form.html"

    class Media:
        js = ["agents/knowledge-upload.js"]

    inlines = [DocumentInline]
    list_display = ["name", "organization", "search_mode", "document_count", "restricted", "active"]

    def narrow_queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        # The chat files are their conversations' (their users' alone): not the administrators' to see.
        return queryset.filter(kind=KnowledgeBaseKind.LIBRARY)

    list_filter = ["restricted"]
    search_fields = ["connector__name", "connector__description"]
    filter_horizontal = ["members", "groups"]
    readonly_fields = ["search_mode", "embedding_model", "embedding_dimension"]
    fieldsets = [
        (None, {"fields": ["organization", "name", "description", "active"]}),
        (_("Documents"), {"fields": ["upload", "add_url", "allowed_private_hosts"]}),
        (
            _("Search"),
            {
                "fields": [
                    "search_mode",
                    "embedding_endpoint",
                    "embedding_model",
                    "embedding_dimension",
                    "rerank_endpoint",
                ]
            },
        ),
        (_("Who may read it"), {"fields": ["restricted", "members", "groups"]}),
    ]

    @admin.display(description=_("name"), ordering="connector__name")
    def name(self, obj: KnowledgeBase) -> str:
        return obj.connector.name

    @admin.display(description=_("active"), boolean=True)
    def active(self, obj: KnowledgeBase) -> bool:
        return obj.connector.is_active

    @admin.display(description=_("documents"))
    def document_count(self, obj: KnowledgeBase) -> int:
        return Document.objects.for_org(obj.organization_id).filter(knowledge_base=obj).count()

    @admin.display(description=_("search"))
    def search_mode(self, obj: KnowledgeBase) -> str:
        if obj.pk is None or obj.embedding_endpoint_id is None:
            return gettext("Keyword search only: choose an embedding endpoint to search by meaning too.")
        backend = vector_backend()
        if isinstance(backend, Unavailable):
            return gettext("Keyword search only: %(reason)s") % {"reason": backend.reason}
        if obj.embedding_dimension is None:
            return gettext("Keyword search until the documents are embedded, then keyword and vector search")
        return gettext("Keyword and vector search (hybrid)")

    def save_model(self, request: HttpRequest, obj: KnowledgeBase, form: Any, change: bool) -> None:
        actor = signed_in_user(request)
        data = form.cleaned_data
        if not change:
            created = knowledge_base_create(
                organization=data["organization"] if "organization" in data else obj.organization,
                name=data["name"],
                description=data.get("description", ""),
                embedding_endpoint=data.get("embedding_endpoint"),
                rerank_endpoint=data.get("rerank_endpoint"),
                restricted=bool(data.get("restricted")),
                members=data.get("members") or (),
                groups=data.get("groups") or (),
                is_active=bool(data.get("active")),
                allowed_private_hosts=data.get("allowed_private_hosts") or (),
                actor=actor,
            )
            form.instance = created
            obj.pk, obj.connector_id = created.pk, created.connector_id
            obj._state.adding = False
            return
        knowledge_base_update(
            knowledge_base=obj,
            actor=actor,
            name=data["name"],
            description=data.get("description", ""),
            is_active=bool(data.get("active")),
            embedding_endpoint=data.get("embedding_endpoint"),
            rerank_endpoint=data.get("rerank_endpoint"),
            restricted=bool(data.get("restricted")),
            members=data.get("members") or (),
            groups=data.get("groups") or (),
            allowed_private_hosts=list(data.get("allowed_private_hosts") or []),
            ip_address=client_ip(request),
        )

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        for upload in form.cleaned_data.get("upload") or []:
            self._uploaded(request, form.instance, upload)
        url = form.cleaned_data.get("add_url")
        if url:
            self._from_url(request, form.instance, url)

    def _from_url(self, request: HttpRequest, knowledge_base: KnowledgeBase, url: str) -> None:
        outcome = document_from_url(knowledge_base=knowledge_base, url=url, actor=signed_in_user(request))
        if isinstance(outcome, UrlRefused):
            self.message_user(
                request,
                _("%(url)s was not added: %(reason)s") % {"url": url, "reason": outcome.message},
                messages.ERROR,
            )
        else:
            self.message_user(
                request,
                _("“%(name)s” will be fetched from %(url)s and indexed.")
                % {"name": outcome.document.name, "url": url},
                messages.SUCCESS,
            )

    def _uploaded(self, request: HttpRequest, knowledge_base: KnowledgeBase, upload: Any) -> None:
        outcome = document_upload(
            knowledge_base=knowledge_base,
            name=upload.name,
            content=upload,
            uploaded_by=signed_in_user(request),
        )
        if isinstance(outcome, DocumentQueued):
            text = (
                _("“%(name)s” replaces the document of that name once it is indexed.")
                if outcome.replaced
                else _("“%(name)s” is stored and waits to be indexed.")
            )
            self.message_user(request, text % {"name": outcome.document.name}, messages.SUCCESS)
        elif isinstance(outcome, DocumentUnchanged):
            self.message_user(
                request,
                _("“%(name)s” is already here, as “%(document)s”: nothing changed.")
                % {"name": upload.name, "document": outcome.document.name},
                messages.INFO,
            )
        elif isinstance(outcome, DocumentTooLarge):
            self.message_user(
                request,
                _("“%(name)s” was not stored: it is %(size)s, the limit is %(limit)s.")
                % {
                    "name": upload.name,
                    "size": filesizeformat(outcome.size),
                    "limit": filesizeformat(outcome.limit),
                },
                messages.ERROR,
            )

    def delete_model(self, request: HttpRequest, obj: KnowledgeBase) -> None:
        knowledge_base_delete(knowledge_base=obj, actor=signed_in_user(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        for knowledge_base in queryset:
            knowledge_base_delete(knowledge_base=knowledge_base, actor=signed_in_user(request))


@admin.register(Document)
class DocumentAdmin(OrgScopedAdmin):
    list_display = [
        "name",
        "knowledge_base",
        "status_shown",
        "page_count",
        "chunk_count",
        "size_shown",
        "updated_at",
    ]
    list_filter = ["status"]
    search_fields = ["name"]
    actions = ["reindex"]
    fields = DOCUMENT_FIELDS
    readonly_fields = DOCUMENT_FIELDS

    def narrow_queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return queryset.filter(knowledge_base__kind=KnowledgeBaseKind.LIBRARY)

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False  # documents are added on their knowledge base's page

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description=_("status"))
    def status_shown(self, obj: Document) -> str:
        return document_status_text(obj)

    @admin.display(description=_("size"))
    def size_shown(self, obj: Document) -> str:
        return filesizeformat(obj.size)

    @admin.display(description=_("file"))
    def download(self, obj: Document) -> str:
        if not obj.file:
            return "-"
        return format_html(
            '<a href="{}">{}</a>',
            reverse(
                "knowledge-document-file",
                kwargs={"org_slug": obj.organization.slug, "document_id": obj.pk},
            ),
            gettext("Download"),
        )

    @admin.action(description=_("Re-index the selected documents"))
    def reindex(self, request: HttpRequest, queryset: QuerySet) -> None:
        actor = signed_in_user(request)
        for document in queryset:
            document_reindex(document=document, actor=actor)
        self.message_user(request, gettext("The documents wait to be indexed again."), messages.SUCCESS)

    def delete_model(self, request: HttpRequest, obj: Document) -> None:
        document_delete(document=obj, actor=signed_in_user(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        for document in queryset:
            document_delete(document=document, actor=signed_in_user(request))
