"""The budget serializer: its user and agent are the URL organisation's only."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers

from agents.usage.models import BUDGET_SETTINGS, Budget
from platform_core.api_unique import OrgUniqueValidator


class MemberPrimaryKeyField(serializers.PrimaryKeyRelatedField):
    """A user of the URL organisation (a member), by id."""

    def get_queryset(self) -> Any:
        org = self.context.get("org")
        users = get_user_model().objects.all()
        return users.filter(memberships__organization=org) if org is not None else users.none()


class OrgAgentPrimaryKeyField(serializers.PrimaryKeyRelatedField):
    """An agent of the URL organisation, by id."""

    def get_queryset(self) -> Any:
        org = self.context.get("org")
        agent_model = Budget._meta.get_field("agent").related_model
        assert isinstance(agent_model, type)  # a foreign key's model, resolved once the apps are loaded
        agents = agent_model._default_manager.all()
        return agents.filter(organization=org) if org is not None else agents.none()


class BudgetSerializer(serializers.ModelSerializer):
    user = MemberPrimaryKeyField(allow_null=True, required=False)
    agent = OrgAgentPrimaryKeyField(allow_null=True, required=False)

    class Meta:
        model = Budget
        fields = ["id", *BUDGET_SETTINGS, "created_at"]
        read_only_fields = ["id", "created_at"]
        validators = [OrgUniqueValidator()]

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """The model's own rules (a user budget names a user, a cost budget its currency...)."""
        probe = Budget(**{**self._current(), **attrs})
        probe.organization = self.context.get("org")
        try:
            probe.clean()
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from exc
        if attrs.get("currency"):
            attrs["currency"] = attrs["currency"].upper()
        return attrs

    def _current(self) -> dict[str, Any]:
        if self.instance is None:
            return {}
        return {
            f: getattr(self.instance, f) for f in ("scope", "user", "agent", "metric", "period", "currency")
        }
