"""Serializers of the guard-rails API. Related objects are limited to the URL's organisation; Feishu
secrets are write-only."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Model, QuerySet
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from connectors.api.secret_fields import SecretStoredField, secret_input
from connectors.models import Connector, ConnectorAction
from hooks import fields as hook_fields
from hooks.approvers import feishu_name, person_name
from hooks.condition_schema import condition_schema_messages, covered_scopes
from hooks.conditions import ConditionError, parse_condition
from hooks.feishu_guard import validate_feishu_base_url
from hooks.models import (
    APPROVER_ROLE_CHOICES,
    AgentHookSettings,
    ApprovalPolicy,
    ApprovalRequest,
    FeishuChannel,
    RateLimit,
)
from hooks.selectors import DECIDER_ROLES
from platform_core.api_unique import OrgUniqueValidator
from platform_core.identity.api_keys.keys import without_service_users
from platform_core.models import Role
from platform_core.tenancy.scoping import OrgScopedPrimaryKeyField


class ApproverUserField(serializers.PrimaryKeyRelatedField):
    """Platform users who may approve: members of the URL's organisation with a deciding role."""

    def get_queryset(self) -> Any:
        org = self.context.get("org")
        users = get_user_model().objects.all()
        if org is None:
            return users.none()
        return without_service_users(
            users.filter(memberships__organization=org, memberships__role__in=DECIDER_ROLES).distinct()
        )


class ApprovalRequestSerializer(serializers.ModelSerializer):
    requested_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    decided_by = serializers.SerializerMethodField()
    approvers = serializers.SerializerMethodField()
    held_because = serializers.CharField(read_only=True)

    class Meta:
        model = ApprovalRequest
        fields = [
            "id",
            "status",
            "tool_name",
            "arguments",
            "hold_reason",
            "held_because",
            "policy",
            "policy_name",
            "agent_name",
            "run",
            "conversation_id",
            "tool_call_id",
            "requested_by",
            "requester_exclusion",
            "approvers",
            "decided_by",
            "decided_via",
            "comment",
            "card_status",
            "feishu_message_id",
            "channel",
            "channel_credentials_version",
            "resend_count",
            "created_at",
            "expires_at",
            "decided_at",
        ]
        read_only_fields = fields

    def get_decided_by(self, obj: ApprovalRequest) -> str | None:
        return obj.decider_label() or None

    def get_approvers(self, obj: ApprovalRequest) -> dict[str, list[str]]:
        people = sorted(obj.approver_users.all(), key=lambda u: u.get_username())
        return {
            "users": [u.get_username() for u in people],
            "names": [person_name(u) for u in people]
            + [feishu_name(open_id) for open_id in obj.approver_open_ids or []],
            "feishu_open_ids": list(obj.approver_open_ids or []),
        }


class DecisionSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=["approve", "reject"])
    comment = serializers.CharField(required=False, allow_blank=True, max_length=2000, default="")


class ApprovalPolicySerializer(serializers.ModelSerializer):
    actions = OrgScopedPrimaryKeyField(queryset=ConnectorAction.objects.all(), many=True, required=False)
    connectors = OrgScopedPrimaryKeyField(queryset=Connector.objects.all(), many=True, required=False)
    approver_users = ApproverUserField(many=True, required=False)
    channel = OrgScopedPrimaryKeyField(queryset=FeishuChannel.objects.all(), allow_null=True, required=False)
    approver_roles = serializers.ListField(
        child=serializers.ChoiceField(choices=list(APPROVER_ROLE_CHOICES)),
        required=False,
        max_length=len(APPROVER_ROLE_CHOICES),
        help_text=_("Every member holding one of these roles may decide too."),
    )
    approver_open_ids = serializers.ListField(
        child=serializers.CharField(max_length=100),
        required=False,
        max_length=100,
        help_text=_("Feishu open_ids of people without a platform account (they decide on the card only)."),
    )
    approvers = serializers.SerializerMethodField(
        help_text=_("The approvers by name: users, roles and people without a platform account.")
    )

    class Meta:
        model = ApprovalPolicy
        fields = [
            "id",
            *hook_fields.POLICY_COVERAGE,
            "approver_users",
            "approver_roles",
            "approver_open_ids",
            "approvers",
            *hook_fields.POLICY_DELIVERY,
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "created_at", "updated_at"]
        validators = [OrgUniqueValidator()]

    def get_approvers(self, obj: ApprovalPolicy) -> dict[str, Any]:
        labels = dict(Role.choices)
        users = []
        for user in sorted(obj.approver_users.all(), key=lambda u: u.get_username()):
            linked = any(
                i.open_id and i.organization_id in (None, obj.organization_id)
                for i in user.linked_identities.all()
            )
            users.append(
                {
                    "id": user.pk,
                    "username": user.get_username(),
                    "name": person_name(user),
                    "feishu_linked": linked,
                }
            )
        return {
            "users": users,
            "roles": [{"role": r, "name": str(labels.get(r, r))} for r in obj.approver_roles or []],
            "without_platform_account": list(obj.approver_open_ids or []),
        }

    def validate_approver_roles(self, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))

    def validate_condition(self, value: str) -> str:
        if value.strip():
            try:
                parse_condition(value)
            except ConditionError as exc:
                raise serializers.ValidationError(str(exc)) from exc
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        instance = self.instance
        actions = attrs.get("actions", list(instance.actions.all()) if instance else [])
        connectors = attrs.get("connectors", list(instance.connectors.all()) if instance else [])
        if not actions and not connectors:
            raise serializers.ValidationError(_("Choose the actions or connectors this policy covers."))
        condition = attrs.get("condition", instance.condition if instance else "")
        writes_only = attrs.get("writes_only", instance.writes_only if instance else True)
        scopes = covered_scopes(actions=actions, connectors=connectors, writes_only=writes_only)
        if (condition or "").strip() and (problems := condition_schema_messages(condition, scopes)):
            raise serializers.ValidationError({"condition": problems})
        return attrs


class FeishuChannelSerializer(serializers.ModelSerializer):
    app_secret = secret_input(trim_whitespace=True)
    verification_token = secret_input(trim_whitespace=True)
    encrypt_key = secret_input(trim_whitespace=True)
    has_app_secret = SecretStoredField("app_secret")
    has_verification_token = SecretStoredField("verification_token")
    has_encrypt_key = SecretStoredField("encrypt_key")
    callback_path = serializers.CharField(read_only=True)

    class Meta:
        model = FeishuChannel
        fields = [
            "id",
            *hook_fields.FEISHU_APP,
            *FeishuChannel.SECRET_FIELDS,
            "has_app_secret",
            "has_verification_token",
            "has_encrypt_key",
            *hook_fields.FEISHU_DELIVERY,
            "callback_path",
            "credentials_version",
            "credentials_changed_at",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "credentials_version", "credentials_changed_at", "created_at", "updated_at"]
        validators = [OrgUniqueValidator()]

    def validate_base_url(self, value: str) -> str:
        try:
            validate_feishu_base_url(value)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from exc
        return value


class TestCardSerializer(serializers.Serializer):
    """The answer of ``test-card/`` (for the schema): whether the card went out, its message or the error."""

    sent = serializers.BooleanField()
    message_id = serializers.CharField(required=False)
    error = serializers.CharField(required=False)


class RateLimitSerializer(serializers.ModelSerializer):
    connector = OrgScopedPrimaryKeyField(queryset=Connector.objects.all(), allow_null=True, required=False)

    class Meta:
        model = RateLimit
        fields = ["id", *hook_fields.RATE_LIMIT, "created_at"]
        read_only_fields = ["id", "created_at"]


def _agents() -> QuerySet[Model]:
    """Every agent, of the model the settings' foreign key names ("agents.Agent"): hooks sit below agents
    and do not import them."""
    model = AgentHookSettings.agent.field.related_model
    assert not isinstance(model, str)  # "self" names only a model's relation to itself
    return model._default_manager.all()  # its one manager, ``objects``


class AgentHookSettingsSerializer(serializers.ModelSerializer):
    agent = OrgScopedPrimaryKeyField(queryset=_agents())

    class Meta:
        model = AgentHookSettings
        fields = ["id", "agent", *hook_fields.AGENT_HOOK_SWITCHES]
        read_only_fields = ["id"]
        validators: list[Any] = []  # the one-per-agent rule is checked in validate() with a clear message

    def validate_agent(self, agent: Any) -> Any:
        others = AgentHookSettings.objects.for_org(agent.organization_id).filter(agent=agent)
        if self.instance is not None:
            others = others.exclude(pk=self.instance.pk)
        if others.exists():
            raise serializers.ValidationError(_("This agent already has hook settings."))
        return agent
