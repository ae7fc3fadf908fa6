"""``/api/v1/orgs/<slug>/knowledge-bases/``: knowledge bases, their documents, uploads and downloads.

Owners and admins manage every knowledge base of the organisation (create, change, delete; upload,
re-index and delete documents). Other members see only the knowledge bases they may read (not
restricted, or restricted with them among its members or in one of its groups) and those bases'
documents; any other knowledge
base is the 404 of a missing one. A document's file is downloaded only by a user who may read its
knowledge base (an admin too must be a member of a restricted one), so what an agent would not show a
user, the API does not either.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import TooManyFilesSent
from django.core.files.uploadedfile import UploadedFile
from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import Http404, HttpResponseBase
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from agents.api.knowledge_serializers import (
    DocumentFromUrlSerializer,
    DocumentUploadSerializer,
    KnowledgeBaseSerializer,
    KnowledgeDocumentSerializer,
    UploadReportSerializer,
)
from agents.knowledge.base_services import knowledge_base_update
from agents.knowledge.download import document_file_response
from agents.knowledge.failures import failure_message
from agents.knowledge.formats import RefusalCode
from agents.knowledge.models import Document, KnowledgeBase, KnowledgeBaseKind
from agents.knowledge.selectors import document_readable, knowledge_bases_readable
from agents.knowledge.services import (
    DocumentTooLarge,
    DocumentUnchanged,
    DocumentUpload,
    UrlRefused,
    document_delete,
    document_from_url,
    document_reindex,
    document_upload,
    knowledge_base_create,
    knowledge_base_delete,
)
from platform_core.api_errors import StorageUnavailable
from platform_core.models import ADMIN_ROLES
from platform_core.request_meta import client_ip
from platform_core.stored_files import StoredFileMissing, StoredFileUnreachable
from platform_core.tenancy.scoping import IsOrgAdminOrReadOnly, IsOrgMember, OrgScopedViewMixin, role_in

_ADMIN_WRITES = [permissions.IsAuthenticated, IsOrgMember, IsOrgAdminOrReadOnly]


class _KnowledgeScope(OrgScopedViewMixin):
    """The knowledge bases the caller sees: all of the organisation's for its owners and admins, the
    readable ones for everyone else."""

    request: Request

    def is_admin(self) -> bool:
        return role_in(self.request, ADMIN_ROLES)

    def visible_knowledge_bases(self) -> QuerySet[KnowledgeBase]:
        if self.is_admin():
            return (
                KnowledgeBase.objects.for_org(self.org)
                .filter(kind=KnowledgeBaseKind.LIBRARY)  # the chat files are their conversations'
                .select_related("connector")
            )
        return knowledge_bases_readable(organization_id=self.org.pk, user_id=self.request.user.pk)


@extend_schema_view(
    list=extend_schema(summary="The knowledge bases the caller sees (admins: all; members: readable ones)"),
    create=extend_schema(summary="Create a knowledge base with its search connector (admins)"),
    retrieve=extend_schema(summary="One knowledge base (404 for one the caller may not read)"),
    partial_update=extend_schema(
        summary="Change a knowledge base's name, description, activity, endpoints or access"
    ),
    destroy=extend_schema(summary="Delete a knowledge base with its documents, passages and files (admins)"),
)
class KnowledgeBaseViewSet(_KnowledgeScope, viewsets.ModelViewSet):
    """The organisation's knowledge bases. Writes are audited; members and groups are listed to admins
    only."""

    queryset = KnowledgeBase.objects.all()
    serializer_class = KnowledgeBaseSerializer
    permission_classes = _ADMIN_WRITES
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_base_queryset(self) -> QuerySet:
        if not hasattr(self, "org"):
            return KnowledgeBase.objects.none()
        documents = (
            Document.objects.for_org(self.org)
            .filter(knowledge_base=OuterRef("pk"))
            .order_by()
            .values("knowledge_base")
            .annotate(count=Count("pk"))
            .values("count")
        )
        queryset = self.visible_knowledge_bases().annotate(
            document_count=Coalesce(Subquery(documents, output_field=IntegerField()), 0)
        )
        return queryset.prefetch_related("members", "groups") if self.is_admin() else queryset

    def get_serializer_context(self) -> dict[str, Any]:
        context = super().get_serializer_context()
        schema = getattr(self, "swagger_fake_view", False)  # the schema documents every field
        context["show_members"] = schema or (hasattr(self, "org") and self.is_admin())
        return context

    def _listed(self, knowledge_base: KnowledgeBase) -> KnowledgeBase:
        """The saved knowledge base as the list shows it (with its document count)."""
        return self.get_queryset().get(pk=knowledge_base.pk)

    def perform_create(self, serializer: Any) -> None:
        data = serializer.validated_data
        connector = data.get("connector", {})
        knowledge_base = knowledge_base_create(
            organization=self.org,
            name=connector["name"],
            description=connector.get("description", ""),
            embedding_endpoint=data.get("embedding_endpoint"),
            rerank_endpoint=data.get("rerank_endpoint"),
            restricted=data.get("restricted", False),
            members=data.get("members", ()),
            groups=data.get("groups", ()),
            actor=self.request.user,
        )
        serializer.instance = self._listed(knowledge_base)

    def perform_update(self, serializer: Any) -> None:
        data = dict(serializer.validated_data)
        changes: dict[str, Any] = dict(data.pop("connector", {}))
        changes.update(
            {
                k: data[k]
                for k in ("embedding_endpoint", "rerank_endpoint", "restricted", "members", "groups")
                if k in data
            }
        )
        knowledge_base = knowledge_base_update(
            knowledge_base=serializer.instance,
            actor=self.request.user,
            ip_address=client_ip(self.request),
            **changes,
        )
        serializer.instance = self._listed(knowledge_base)

    def perform_destroy(self, instance: KnowledgeBase) -> None:
        knowledge_base_delete(knowledge_base=instance, actor=self.request.user)


def _outcome(upload: DocumentUpload, file_name: str) -> dict[str, Any]:
    """One file's line of an upload's answer."""
    if isinstance(upload, DocumentTooLarge):
        figures = {"size": upload.size, "limit": upload.limit}
        return {
            "file": file_name,
            "outcome": "too_large",
            "message": failure_message(RefusalCode.TOO_LARGE, figures),
            "document": None,
        }
    document = upload.document
    if isinstance(upload, DocumentUnchanged):
        outcome, message = (
            "unchanged",
            _("The knowledge base already holds this very file, as “%(document)s”: nothing was stored.")
            % {"document": document.name},
        )
    elif upload.replaced:
        outcome, message = (
            "replaced",
            _("A new version of “%(document)s”: it replaces the old one once it is indexed.")
            % {"document": document.name},
        )
    else:
        outcome, message = "queued", _("Stored; waiting to be indexed.")
    return {
        "file": file_name,
        "outcome": outcome,
        "message": message,
        "document": KnowledgeDocumentSerializer(document).data,
    }


@extend_schema_view(
    list=extend_schema(summary="The documents of a knowledge base the caller may read"),
    retrieve=extend_schema(summary="One document and where its indexing stands"),
    destroy=extend_schema(summary="Delete a document with its passages and stored file (admins)"),
)
class KnowledgeDocumentViewSet(
    _KnowledgeScope,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """The documents of one knowledge base (the URL's, among those the caller sees)."""

    queryset = Document.objects.all()
    serializer_class = KnowledgeDocumentSerializer
    permission_classes = _ADMIN_WRITES

    def knowledge_base(self) -> KnowledgeBase:
        cached = getattr(self, "_knowledge_base", None)
        if cached is None:
            cached = self.visible_knowledge_bases().filter(pk=self.kwargs["knowledge_base_id"]).first()
            if cached is None:
                raise Http404("No such knowledge base.")
            self._knowledge_base = cached
        return cached

    def filter_org_queryset(self, queryset: QuerySet) -> QuerySet:
        return queryset.filter(knowledge_base=self.knowledge_base()).select_related("uploaded_by")

    @extend_schema(
        summary="Upload one or several files (admins)",
        description=(
            "`multipart/form-data`, each file in a `files` field. Every file is answered with its outcome. "
            "201 when at least one file was stored (a new document or a new version, queued for indexing); "
            "200 when nothing needed storing (every file is already held unchanged); 400 when nothing was "
            "stored and a file was refused (too large), with every file's outcome."
        ),
        request={"multipart/form-data": DocumentUploadSerializer},
        responses={
            201: UploadReportSerializer,
            200: UploadReportSerializer,
            400: OpenApiResponse(UploadReportSerializer, description="Nothing stored: a file was refused"),
        },
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        knowledge_base = self.knowledge_base()
        try:
            data = request.data
        except TooManyFilesSent as exc:
            limit = settings.DATA_UPLOAD_MAX_NUMBER_FILES
            raise ValidationError(
                {"files": [_("Send at most %(limit)s files at once.") % {"limit": limit}]}
            ) from exc
        serializer = DocumentUploadSerializer(data=data)
        serializer.is_valid(raise_exception=True)
        files: list[UploadedFile] = serializer.validated_data["files"]
        outcomes = []
        for upload in files:
            file_name = upload.name or ""
            done = document_upload(
                knowledge_base=knowledge_base, name=file_name, content=upload, uploaded_by=request.user
            )
            outcomes.append(_outcome(done, file_name))
        stored = any(line["outcome"] in ("queued", "replaced") for line in outcomes)
        refused = any(line["outcome"] == "too_large" for line in outcomes)
        if stored:
            code = status.HTTP_201_CREATED
        elif refused:
            code = status.HTTP_400_BAD_REQUEST
        else:
            code = status.HTTP_200_OK
        return Response({"files": outcomes}, status=code)

    @extend_schema(
        summary="Add a document fetched from a URL (admins)",
        description=(
            "The URL is checked by the SSRF guard now, with the knowledge base's allowed private hosts, and "
            "fetched (again through the guard, redirects included) when the document is indexed, and again "
            "at each re-index. A URL the knowledge base already has is indexed again. 201 with the document; "
            "400 with `url` when the guard refuses it."
        ),
        request=DocumentFromUrlSerializer,
        responses={201: KnowledgeDocumentSerializer},
    )
    @action(detail=False, methods=["post"], url_path="from-url")
    def from_url(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = DocumentFromUrlSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        done = document_from_url(
            knowledge_base=self.knowledge_base(), url=serializer.validated_data["url"], actor=request.user
        )
        if isinstance(done, UrlRefused):
            raise ValidationError({"url": [done.message]})
        return Response(KnowledgeDocumentSerializer(done.document).data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance: Document) -> None:
        document_delete(document=instance, actor=self.request.user)

    @extend_schema(summary="Index a document again from its stored file (admins)", request=None)
    @action(detail=True, methods=["post"])
    def reindex(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        document = document_reindex(document=self.get_object(), actor=request.user)
        return Response(self.get_serializer(document).data)

    @extend_schema(
        summary="Download a document's file (readers of its knowledge base only; 404 for anyone else)",
        responses={
            (200, "application/octet-stream"): OpenApiTypes.BINARY,
            404: OpenApiResponse(description="No such document, or the caller may not read it"),
        },
    )
    @action(detail=True, methods=["get"])
    def download(self, request: Request, *args: Any, **kwargs: Any) -> HttpResponseBase:
        document = document_readable(
            organization_id=self.org.pk, user_id=request.user.pk, document_id=kwargs["pk"]
        )
        if document is None or document.knowledge_base_id != self.knowledge_base().pk:
            raise Http404("No such document.")
        response = document_file_response(document)
        if isinstance(response, StoredFileMissing):
            raise Http404("No such document.")
        if isinstance(response, StoredFileUnreachable):
            raise StorageUnavailable()
        return response

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        """A download answers whatever the client accepts (its errors in JSON)."""
        return super().perform_content_negotiation(request, force=force or self.action == "download")
