"""Serializers of the tenancy API."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from platform_core.audit.actions import audit_action_label
from platform_core.models import AUDIT_CHANGE_FIELDS, AuditLog, Organization


class OrganizationSettingsSerializer(serializers.ModelSerializer):
    read_only_changed_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Organization
        fields = [
            "slug",
            "name",
            "read_only",
            "read_only_reason",
            "read_only_changed_by",
            "read_only_changed_at",
            "approval_config_cooldown_hours",
            "time_zone",
            "attachment_retention_days",
            "memory_retention_days",
        ]
        read_only_fields = ["slug", "name", "read_only_changed_by", "read_only_changed_at"]

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        instance = self.instance
        enabled = attrs.get("read_only", instance.read_only if instance else False)
        reason = attrs.get("read_only_reason", instance.read_only_reason if instance else "")
        if enabled and not (reason or "").strip():
            raise serializers.ValidationError(
                {"read_only_reason": _("A reason is required to turn on read-only mode.")}
            )
        return attrs


class AuditLogSerializer(serializers.ModelSerializer):
    actor = serializers.SlugRelatedField(slug_field="username", read_only=True)
    action_label = serializers.SerializerMethodField(
        help_text=_("The action's name in the reader's language.")
    )

    class Meta:
        model = AuditLog
        fields = [
            "id",
            "created_at",
            "actor",
            "action",
            "action_label",
            *AUDIT_CHANGE_FIELDS,
        ]
        read_only_fields = fields

    def get_action_label(self, entry: AuditLog) -> str:
        return audit_action_label(entry.action)


class OrganizationSerializer(serializers.ModelSerializer):
    role = serializers.SerializerMethodField()

    class Meta:
        model = Organization
        fields = ["slug", "name", "read_only", "role"]
        read_only_fields = fields

    def get_role(self, org: Organization) -> str | None:
        roles = self.context.get("roles", {})
        return roles.get(org.pk)
