"""Serializers of the agents API. Related objects are limited to the URL's organisation."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agents.api.attachment_serializers import MessageAttachmentSerializer
from agents.endpoint_guard import validate_model_endpoint_url
from agents.endpoint_headers import api_key_sendable, headers_dump, headers_sendable, headers_validate
from agents.example_questions import (
    MAX_EXAMPLE_QUESTION_CHARS,
    MAX_EXAMPLE_QUESTIONS,
    example_questions_clean,
)
from agents.fallback_chain import fallback_problem
from agents.knowledge.selectors import attachable_connectors
from agents.model_presets import ABILITY_KEYS
from agents.models import AGENT_SETTINGS, Agent, Conversation, Message, ModelConfig, RunEvent
from agents.skills.models import Skill
from connectors.models import Connector
from platform_core.api_unique import OrgUniqueValidator
from platform_core.secret_rules import validate_secret_length
from platform_core.tenancy.scoping import OrgScopedPrimaryKeyField


def validate_api_key_sendable(value: str) -> None:
    """Refuse a key that no request header can carry (the endpoint check and every run would fail)."""
    if not api_key_sendable(value):
        raise serializers.ValidationError(
            _(
                "An API key is sent in a request header: use visible ASCII characters only, no spaces or line breaks."
            )
        )


class ModelConfigSerializer(serializers.ModelSerializer):
    api_key = serializers.CharField(
        write_only=True,
        required=False,
        allow_blank=True,
        trim_whitespace=True,
        validators=[validate_secret_length, validate_api_key_sendable],
        help_text=_("Write-only. Leave out to keep the stored key; send an empty string to remove it."),
    )
    has_api_key = serializers.SerializerMethodField()
    extra_headers = serializers.JSONField(
        write_only=True,
        required=False,
        allow_null=True,
        help_text=_(
            "Write-only: an object of header name to value sent with every request. Leave out to keep the "
            "stored headers; send {} or null to remove them."
        ),
    )
    extra_header_names = serializers.SerializerMethodField()
    fallback = OrgScopedPrimaryKeyField(
        queryset=ModelConfig.objects.all(),
        allow_null=True,
        required=False,
        help_text=_("The organisation's endpoint that answers when this one is unavailable (null: none)."),
    )

    class Meta:
        model = ModelConfig
        fields = [
            "id",
            "name",
            "role",
            "provider",
            "base_url",
            "model",
            "api_key",
            "has_api_key",
            "api_version",
            "extra_headers",
            "extra_header_names",
            *ABILITY_KEYS,
            "context_window",
            "max_output_tokens",
            "timeout",
            "price_input",
            "price_cached_input",
            "price_output",
            "price_currency",
            "fallback",
            "is_default",
            "active",
            "last_check",
            "last_checked_at",
            "created_at",
        ]
        read_only_fields = ["id", "last_check", "last_checked_at", "created_at"]
        validators = [OrgUniqueValidator()]

    def get_has_api_key(self, obj: ModelConfig) -> bool:
        return bool(obj.__dict__.get("api_key"))

    def get_extra_header_names(self, obj: ModelConfig) -> list[str]:
        """The names of the stored extra headers (their values are never returned)."""
        return obj.header_names

    def validate_base_url(self, value: str) -> str:
        try:
            validate_model_endpoint_url(value)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from exc
        return value

    def validate_fallback(self, value: ModelConfig | None) -> ModelConfig | None:
        """No endpoint may fall back to itself, directly or through its fallbacks."""
        if value is None:
            return None
        probe = self.instance or ModelConfig(organization_id=value.organization_id)
        saved = probe.fallback if self.instance is not None else None
        probe.fallback = value
        try:
            problem = fallback_problem(probe)
        finally:
            probe.fallback = saved
        if problem is not None:
            raise serializers.ValidationError(problem)
        return value

    def validate_extra_headers(self, value: Any) -> str:
        if value is None:
            return ""
        if not isinstance(value, dict):
            raise serializers.ValidationError(_("Give the headers as a JSON object."))
        try:
            headers = headers_validate(value)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from exc
        if not headers_sendable(headers):
            raise serializers.ValidationError(
                _("Header values are sent as ASCII: use visible ASCII characters, spaces and tabs only.")
            )
        return headers_dump(headers)

    def create(self, validated_data: dict[str, Any]) -> ModelConfig:
        api_key = validated_data.pop("api_key", "")
        headers = validated_data.pop("extra_headers", "")
        instance = ModelConfig(**validated_data)
        instance.api_key = api_key
        instance.extra_headers = headers
        instance.save()
        return instance

    def update(self, instance: ModelConfig, validated_data: dict[str, Any]) -> ModelConfig:
        for secret in ("api_key", "extra_headers"):
            if secret in validated_data:
                setattr(instance, secret, validated_data.pop(secret))
        for name, value in validated_data.items():
            setattr(instance, name, value)
        instance.save()
        return instance


class ProbeOutcomeSerializer(serializers.Serializer):
    probe = serializers.CharField()
    status = serializers.ChoiceField(choices=["works", "refused", "not_checked"])
    message = serializers.CharField(allow_blank=True)


class EndpointCheckReportSerializer(serializers.Serializer):
    """A "Check endpoint" report (as stored in ``last_check``)."""

    checked_at = serializers.DateTimeField()
    elapsed = serializers.FloatField()
    key_verified = serializers.BooleanField(allow_null=True)
    model_found = serializers.BooleanField(allow_null=True)
    refused_by_guard = serializers.CharField(allow_blank=True)
    abilities = serializers.DictField(child=serializers.BooleanField())
    probes = ProbeOutcomeSerializer(many=True)


class ApplyCheckSerializer(serializers.Serializer):
    """What "apply the abilities found" changed, and the endpoint after it."""

    changed = serializers.DictField(child=serializers.BooleanField())
    model_config = ModelConfigSerializer()


class ModelFamilySerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
    model = serializers.CharField(allow_blank=True)
    context_window = serializers.IntegerField()
    max_output_tokens = serializers.IntegerField(allow_null=True)
    source = serializers.URLField()
    abilities = serializers.DictField(child=serializers.BooleanField(allow_null=True))


class EmbeddingFamilySerializer(serializers.Serializer):
    """An embedding model of a provider, for an endpoint of role "embedding" (``agents.embedding_presets``)."""

    key = serializers.CharField()
    label = serializers.CharField()
    model = serializers.CharField(allow_blank=True)
    role = serializers.CharField()
    dimension = serializers.IntegerField(allow_null=True)
    dimensions = serializers.ListField(child=serializers.IntegerField())
    max_input_tokens = serializers.IntegerField(allow_null=True)
    max_batch = serializers.IntegerField(allow_null=True)
    source = serializers.URLField()


class RerankFamilySerializer(serializers.Serializer):
    """A rerank model of a provider, for an endpoint of role "rerank" (``agents.rerank_presets``)."""

    key = serializers.CharField()
    label = serializers.CharField()
    model = serializers.CharField(allow_blank=True)
    role = serializers.CharField()
    base_url = serializers.CharField(
        help_text=_("Where the provider's rerank API is (a pattern: replace the parts in braces).")
    )
    path = serializers.CharField(help_text=_("The path the request is posted to under the base URL."))
    max_documents = serializers.IntegerField(allow_null=True)
    max_input_tokens = serializers.IntegerField(allow_null=True)
    source = serializers.URLField()


class ModelPresetSerializer(serializers.Serializer):
    """One provider's endpoint preset (``agents.model_presets``)."""

    provider = serializers.CharField()
    label = serializers.CharField()
    base_url = serializers.CharField(help_text=_("A pattern: replace the parts in braces."))
    source = serializers.URLField()
    key_help = serializers.CharField()
    api_version = serializers.CharField(allow_blank=True)
    api_key_header = serializers.CharField(allow_blank=True)
    headers = serializers.DictField(child=serializers.CharField(allow_blank=True))
    abilities = serializers.DictField(child=serializers.BooleanField(allow_null=True))
    families = ModelFamilySerializer(many=True)
    embedding_families = EmbeddingFamilySerializer(many=True)
    rerank_families = RerankFamilySerializer(many=True)


@extend_schema_field(
    {
        "type": "array",
        "items": {"type": "string", "maxLength": MAX_EXAMPLE_QUESTION_CHARS},
        "maxItems": MAX_EXAMPLE_QUESTIONS,
    }
)
class ExampleQuestionsField(serializers.JSONField):
    """A list of example questions, checked by the same rules as the admin's."""

    def to_internal_value(self, data: Any) -> list[str]:
        try:
            return example_questions_clean(super().to_internal_value(data))
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from exc


class AgentSerializer(serializers.ModelSerializer):
    model_config = OrgScopedPrimaryKeyField(
        queryset=ModelConfig.objects.all(), allow_null=True, required=False
    )
    connectors = OrgScopedPrimaryKeyField(
        queryset=attachable_connectors(Connector.objects.all()), many=True, required=False
    )
    skills = OrgScopedPrimaryKeyField(
        queryset=Skill.objects.all(),
        many=True,
        required=False,
        help_text=_("Ids of the organisation's skills the agent is told about and may read."),
    )
    example_questions = ExampleQuestionsField(required=False)

    class Meta:
        model = Agent
        fields = ["id", *AGENT_SETTINGS, "created_at"]
        read_only_fields = ["id", "created_at"]
        validators = [OrgUniqueValidator()]


class ConversationSerializer(serializers.ModelSerializer):
    agent = OrgScopedPrimaryKeyField(queryset=Agent.objects.filter(active=True))
    agent_name = serializers.CharField(source="agent.name", read_only=True)

    class Meta:
        model = Conversation
        fields = ["id", "agent", "agent_name", "title", "created_at", "updated_at"]
        read_only_fields = ["id", "created_at", "updated_at"]


class ConversationRenameSerializer(serializers.ModelSerializer):
    """What a PATCH may change: the title only."""

    title = serializers.CharField(max_length=200, allow_blank=True)

    class Meta:
        model = Conversation
        fields = ["title"]


class MessageSerializer(serializers.ModelSerializer):
    """A message of the conversation, with the files sent with it (``attachments`` in the context: each
    message's, read for the whole page at once)."""

    run_id = serializers.UUIDField(read_only=True)
    attachments = serializers.SerializerMethodField(help_text=_("The files sent with the message."))

    class Meta:
        model = Message
        fields = ["id", "role", "content", "run_id", "pinned", "injected", "created_at", "attachments"]
        read_only_fields = fields

    @extend_schema_field(MessageAttachmentSerializer(many=True))
    def get_attachments(self, message: Message) -> list[dict[str, Any]]:
        found = self.context.get("attachments", {}).get(message.pk, [])
        return list(MessageAttachmentSerializer(found, many=True, context=self.context).data)


class RunEventSerializer(serializers.ModelSerializer):
    run_id = serializers.UUIDField(read_only=True)

    class Meta:
        model = RunEvent
        fields = ["seq", "run_id", "event", "data"]
        read_only_fields = fields
