"""Serializers of the knowledge-base API: knowledge bases, their documents and an upload's outcomes.

A knowledge base's name, description and activity are its connector's (the name is a connector name:
its tool is ``<name>__search``); its embedding and rerank endpoints, members and groups are limited to the
URL's organisation. A document's failure reason is written in the request's language when it is shown.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from agents.knowledge.base_services import embedding_endpoint_error, rerank_endpoint_error
from agents.knowledge.failures import failure_message
from agents.knowledge.models import Document, DocumentStatus, KnowledgeBase
from agents.knowledge.search import SearchMode
from agents.models import ModelConfig
from connectors.knowledge.kind import SEARCH_ACTION
from connectors.models import Connector, connector_name_validator
from connectors.tools import tool_name_for
from platform_core.models import MemberGroup, Membership
from platform_core.tenancy.scoping import OrgScopedPrimaryKeyField

NAME_MAX_LENGTH = Connector._meta.get_field("name").max_length


class OrgMemberField(serializers.PrimaryKeyRelatedField):
    """A user who is a member of the URL's organisation (none without one)."""

    def get_queryset(self) -> Any:
        org = self.context.get("org")
        users = super().get_queryset()
        if org is None:
            return users.none()
        return users.filter(pk__in=Membership.objects.filter(organization=org).values("user_id"))


class OrgGroupField(OrgScopedPrimaryKeyField):
    """A member group of the URL's organisation; another organisation's is refused as a missing one."""

    default_error_messages = {
        **OrgScopedPrimaryKeyField.default_error_messages,
        "does_not_exist": _("Choose groups of this organisation."),
    }


class KnowledgeBaseSerializer(serializers.Serializer):
    """A knowledge base. ``members`` and ``groups`` (who may read a restricted one) are shown to admins
    only."""

    id = serializers.UUIDField(read_only=True)
    name = serializers.CharField(
        source="connector.name",
        max_length=NAME_MAX_LENGTH,
        validators=[connector_name_validator],
        help_text=_("A connector name, unique in the organisation: the search tool is “<name>__search”."),
    )
    description = serializers.CharField(
        source="connector.description",
        required=False,
        allow_blank=True,
        default="",
        help_text=_("What the documents are; the model reads it."),
    )
    is_active = serializers.BooleanField(
        source="connector.is_active",
        required=False,
        help_text=_("Whether agents may search it. New knowledge bases are active; change it with PATCH."),
    )
    tool_name = serializers.SerializerMethodField()
    connector = serializers.UUIDField(source="connector_id", read_only=True)
    embedding_endpoint = OrgScopedPrimaryKeyField(
        queryset=ModelConfig.objects.all(),
        allow_null=True,
        required=False,
        help_text=_("The organisation's model endpoint of role “embedding” (null: keyword search only)."),
    )
    rerank_endpoint = OrgScopedPrimaryKeyField(
        queryset=ModelConfig.objects.all(),
        allow_null=True,
        required=False,
        help_text=_(
            "The organisation's model endpoint of role “rerank”: it reorders each search's best passages "
            "(null: the fused ranking is kept)."
        ),
    )
    embedding_model = serializers.CharField(read_only=True)
    embedding_dimension = serializers.IntegerField(read_only=True, allow_null=True)
    search_mode = serializers.SerializerMethodField()
    restricted = serializers.BooleanField(
        required=False,
        default=False,
        help_text=_("On: only the members listed and the members of the groups listed get passages from it."),
    )
    members = OrgMemberField(
        queryset=get_user_model().objects.all(),
        many=True,
        required=False,
        help_text=_("Ids of the organisation's members who may read it when restricted (admins only)."),
    )
    groups = OrgGroupField(
        queryset=MemberGroup.objects.all(),
        many=True,
        required=False,
        help_text=_(
            "Ids of the organisation's member groups whose members may read it when restricted (admins only)."
        ),
    )
    document_count = serializers.IntegerField(read_only=True)
    created_at = serializers.DateTimeField(read_only=True)

    def get_tool_name(self, knowledge_base: KnowledgeBase) -> str:
        return tool_name_for(knowledge_base.connector.name, SEARCH_ACTION)

    def get_search_mode(self, knowledge_base: KnowledgeBase) -> str:
        """``hybrid`` with an embedding endpoint, else ``keyword``."""
        return SearchMode.HYBRID if knowledge_base.embedding_endpoint_id else SearchMode.KEYWORD

    def validate_name(self, value: str) -> str:
        org = self.context.get("org")
        taken = Connector.objects.for_org(org).filter(name=value) if org is not None else None
        if taken is not None and self.instance is not None:
            taken = taken.exclude(pk=self.instance.connector_id)
        if taken is not None and taken.exists():
            raise serializers.ValidationError(
                _("A connector or knowledge base of the organisation already has this name.")
            )
        return value

    def validate_embedding_endpoint(self, value: ModelConfig | None) -> ModelConfig | None:
        org = self.context.get("org")
        problem = embedding_endpoint_error(organization_id=org.pk if org else 0, endpoint=value)
        if problem:
            raise serializers.ValidationError(problem)
        return value

    def validate_rerank_endpoint(self, value: ModelConfig | None) -> ModelConfig | None:
        org = self.context.get("org")
        problem = rerank_endpoint_error(organization_id=org.pk if org else 0, endpoint=value)
        if problem:
            raise serializers.ValidationError(problem)
        return value

    def validate_is_active(self, value: bool) -> bool:
        if self.instance is None and not value:
            raise serializers.ValidationError(
                _("A new knowledge base is active; deactivate it with PATCH once it exists.")
            )
        return value

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        if not self.context.get("show_members", True):
            del fields["members"]
            del fields["groups"]
        return fields


class KnowledgeDocumentSerializer(serializers.ModelSerializer):
    """A document and where its indexing stands; ``failure_reason`` is in the request's language."""

    failure_reason = serializers.SerializerMethodField(
        help_text=_("Why indexing failed, in words an admin can act on (empty unless failed).")
    )
    uploaded_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Document
        fields = [
            "id",
            "knowledge_base",
            "name",
            "format",
            "size",
            "sha256",
            "source_url",
            "status",
            "failure_code",
            "failure_reason",
            "page_count",
            "chunk_count",
            "version",
            "uploaded_by",
            "created_at",
            "updated_at",
            "indexed_at",
        ]
        read_only_fields = fields

    def get_failure_reason(self, document: Document) -> str:
        if document.status != DocumentStatus.FAILED:
            return ""
        return failure_message(document.failure_code, document.failure_figures)


class DocumentUploadSerializer(serializers.Serializer):
    """``multipart/form-data`` with one or several files in ``files`` (repeat the field)."""

    files = serializers.ListField(
        child=serializers.FileField(),
        allow_empty=False,
        help_text=_("The files to add: a file of the same name as a document replaces it (a new version)."),
    )


class DocumentFromUrlSerializer(serializers.Serializer):
    """A document to fetch from a URL."""

    url = serializers.URLField(max_length=2000, help_text=_("An http:// or https:// URL of the document."))


class UploadOutcomeSerializer(serializers.Serializer):
    """What became of one uploaded file."""

    file = serializers.CharField(help_text=_("The uploaded file's name."))
    outcome = serializers.ChoiceField(
        choices=["queued", "replaced", "unchanged", "too_large"],
        help_text=_(
            "queued: a new document, waiting to be indexed; replaced: a new version of the document of "
            "that name, which replaces the old one once indexed; unchanged: the knowledge base already "
            "holds this very file, nothing was stored; too_large: over the size limit, nothing was stored."
        ),
    )
    message = serializers.CharField(help_text=_("The outcome in the request's language."))
    document = KnowledgeDocumentSerializer(
        allow_null=True, help_text=_("The document that holds the file (null: too large).")
    )


class UploadReportSerializer(serializers.Serializer):
    files = UploadOutcomeSerializer(many=True)
