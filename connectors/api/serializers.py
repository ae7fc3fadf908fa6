"""Serializers of the connectors API. Secrets are write-only: responses say whether one is set, never what."""

from __future__ import annotations

import json
from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from connectors import fields as connector_fields
from connectors.api.secret_fields import SecretStoredField, secret_input
from connectors.forms import validate_dsn_secret
from connectors.http.openapi import MAX_DOCUMENT_CHARS
from connectors.mcp.trust import server_claim
from connectors.models import Connector, ConnectorAction, ConnectorCallLog
from connectors.platform_kinds import kind_choice_error
from platform_core.api_unique import OrgUniqueValidator

_SECRET_STYLE = {"input_type": "password"}


class OpenAPIDocumentField(serializers.JSONField):
    """An OpenAPI document given as JSON/YAML text or as a JSON object; always yields text."""

    def to_internal_value(self, data: Any) -> str:
        if isinstance(data, str):
            text = data
        elif isinstance(data, dict):
            text = json.dumps(data, ensure_ascii=False)
        else:
            raise serializers.ValidationError(
                _("Give the document as JSON or YAML text, or as a JSON object.")
            )
        if len(text) > MAX_DOCUMENT_CHARS:
            raise serializers.ValidationError(_("The document is too large."))
        return text


class ConnectorSerializer(serializers.ModelSerializer):
    """A connector. ``auth_secret`` and ``dsn`` are write-only: omit to keep, ``""`` to clear."""

    auth_secret = secret_input(
        trim_whitespace=False,
        style=_SECRET_STYLE,
        help_text=_("API key, bearer token, password or client secret, by authentication type."),
    )
    dsn = secret_input(validator=validate_dsn_secret, trim_whitespace=False, style=_SECRET_STYLE)
    has_auth_secret = SecretStoredField("auth_secret")
    has_dsn = SecretStoredField("dsn")
    openapi = OpenAPIDocumentField(
        write_only=True,
        required=False,
        help_text=_("On create: an OpenAPI 3 document whose operations become the connector's actions."),
    )
    action_count = serializers.IntegerField(read_only=True)
    active_action_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Connector
        fields = [
            "id",
            *connector_fields.IDENTITY,
            *connector_fields.HTTP,
            *connector_fields.MCP,
            *connector_fields.AUTHENTICATION,
            "auth_secret",
            "has_auth_secret",
            *connector_fields.DATABASE_ENGINE,
            "dsn",
            "has_dsn",
            *connector_fields.NETWORK_LIMITS,
            *connector_fields.DATABASE_LIMITS,
            *connector_fields.PRIVATE_HOSTS,
            "is_active",
            "action_count",
            "active_action_count",
            "openapi",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "created_at", "updated_at"]
        # The name is unique per organisation (the URL's): checked here so a taken name is a field error.
        validators = [OrgUniqueValidator()]

    def validate_allowed_private_hosts(self, value: Any) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise serializers.ValidationError(_("Give a list of host names."))
        return [v.strip() for v in value if v.strip()]

    def validate_mcp_command(self, value: Any) -> list[str]:
        if value is None:  # stored as a list: an empty one for connectors that run no command
            raise serializers.ValidationError(
                _("Give the command and its arguments as a JSON list of strings.")
            )
        return value

    def validate_kind(self, value: str) -> str:
        error = kind_choice_error(self.instance.kind if self.instance is not None else None, value)
        if error:
            raise serializers.ValidationError(error)
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if self.instance is not None and "openapi" in attrs:
            raise serializers.ValidationError(
                {"openapi": _("Re-import a document with POST .../connectors/<id>/import-openapi/.")}
            )
        return attrs


class ImportOpenAPISerializer(serializers.Serializer):
    document = OpenAPIDocumentField(
        help_text=_("The OpenAPI 3 document (JSON or YAML text, or a JSON object).")
    )


class ImportReportSerializer(serializers.Serializer):
    added = serializers.ListField(child=serializers.CharField())
    changed = serializers.ListField(child=serializers.CharField())
    removed = serializers.ListField(child=serializers.CharField())
    unchanged = serializers.ListField(child=serializers.CharField())
    skipped = serializers.ListField(child=serializers.DictField())


class ConnectorActionSerializer(serializers.ModelSerializer):
    """An action of a connector. ``is_write`` is derived unless ``is_write_override`` is true."""

    connector = serializers.PrimaryKeyRelatedField(read_only=True)
    mcp_server_claim = serializers.SerializerMethodField(
        help_text=_("MCP tools: what the server's annotations claim ('read', 'write', 'contradictory').")
    )
    mcp_read_confirmed_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = ConnectorAction
        fields = [
            "id",
            "connector",
            *connector_fields.ACTION_OPERATION,
            *connector_fields.ACTION_MCP_TOOL,
            "mcp_server_claim",
            *connector_fields.ACTION_MCP_CONFIRMATION,
            *connector_fields.ACTION_WRITES,
            *connector_fields.ACTION_ORIGIN,
            "is_active",
            "created_at",
            "updated_at",
        ]
        read_only_fields = [
            "id",
            "connector",
            *connector_fields.ACTION_MCP_TOOL,
            "mcp_read_confirmed_at",
            *connector_fields.ACTION_ORIGIN,
            "created_at",
            "updated_at",
        ]
        validators: list[Any] = []

    def get_mcp_server_claim(self, action: ConnectorAction) -> str:
        return server_claim(action.mcp_annotations).kind if action.mcp_tool else ""


class ConnectorCallLogSerializer(serializers.ModelSerializer):
    user = serializers.SlugRelatedField(slug_field="username", read_only=True)
    connector_name = serializers.SerializerMethodField()
    action_name = serializers.SerializerMethodField()

    class Meta:
        model = ConnectorCallLog
        fields = [
            "id",
            "created_at",
            "tool_name",
            "connector",
            "connector_name",
            "action",
            "action_name",
            "user",
            "agent_id",
            "conversation_id",
            "run_id",
            "tool_call_id",
            "arguments",
            "status",
            "is_write",
            "http_status",
            "row_count",
            "latency_ms",
            "request_bytes",
            "response_bytes",
            "error",
            "approval_ref",
            "mcp_method",
        ]
        read_only_fields = fields

    def get_connector_name(self, log: ConnectorCallLog) -> str | None:
        return log.connector.name if log.connector is not None else None

    def get_action_name(self, log: ConnectorCallLog) -> str | None:
        return log.action.name if log.action is not None else None
