"""``/api/v1/orgs/<slug>/sign-in-rules/`` and ``…/sign-in-settings/``: the organisation's sign-in rules
and its password sign-in switch, for owners and admins (audited like the admin pages)."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import generics, serializers, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from platform_core.api.audited import AuditedWritesMixin
from platform_core.api_unique import OrgUniqueValidator
from platform_core.audit.audited import audited_save
from platform_core.models import SignInRule, SignInSettings
from platform_core.request_meta import client_ip
from platform_core.sso.validation import (
    MATCH_FIXED,
    NO_PROVIDER,
    password_off_problem,
    provider_choices,
    rule_match_changed,
    sign_in_rule_clean,
)
from platform_core.tenancy.scoping import IsOrgAdmin, OrgScopedViewMixin


class ProviderChoiceField(serializers.ChoiceField):
    """The deployment's sign-in providers; its schema is a plain string while none is configured
    (``platform_core.schema.ProviderChoiceFieldExtension``: an empty ``enum`` is invalid OpenAPI)."""


class SignInRuleSerializer(serializers.ModelSerializer):
    provider = ProviderChoiceField(
        choices=(), help_text=_("'feishu', or the id of an OpenID Connect provider of this deployment.")
    )
    approved = serializers.SerializerMethodField(
        help_text=_("Whether an operator approved the claim: until then the rule routes no sign-in.")
    )

    class Meta:
        model = SignInRule
        fields = [
            "id",
            "provider",
            "feishu_tenant_key",
            "email_domain",
            "role",
            "approved",
            "approved_at",
            "created_at",
        ]
        read_only_fields = ["id", "approved_at", "created_at"]
        validators = [OrgUniqueValidator()]

    def get_approved(self, obj: SignInRule) -> bool:
        return obj.approved_at is not None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        provider = self.fields["provider"]
        provider.choices = provider_choices()
        if not provider.choices:  # nothing to choose: say what the operator configures (issue 32)
            for code in ("required", "invalid_choice", "blank", "null"):
                provider.error_messages[code] = str(NO_PROVIDER)

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        """Normalised here, not in ``validate``: DRF runs ``Meta.validators`` (the organisation-unique
        check) between the two, and it must compare the values that will be stored (DRF runs
        ``to_internal_value``, then the validators, then ``validate``:
        https://www.django-rest-framework.org/api-guide/serializers/#validation)."""
        attrs = super().to_internal_value(data)
        current = self.instance
        outcome = sign_in_rule_clean(
            provider=attrs.get("provider", getattr(current, "provider", "")),
            feishu_tenant_key=attrs.get("feishu_tenant_key", getattr(current, "feishu_tenant_key", "")),
            email_domain=attrs.get("email_domain", getattr(current, "email_domain", "")),
        )
        if isinstance(outcome, dict):
            raise serializers.ValidationError({k: str(v) for k, v in outcome.items()})
        attrs["feishu_tenant_key"], attrs["email_domain"] = outcome.feishu_tenant_key, outcome.email_domain
        if current is not None and rule_match_changed(rule=current, values=attrs):
            raise serializers.ValidationError(
                {"email_domain" if current.email_domain else "feishu_tenant_key": str(MATCH_FIXED)}
            )
        return attrs


class SignInRuleViewSet(AuditedWritesMixin, OrgScopedViewMixin, viewsets.ModelViewSet):
    """Sign-in rules: which Feishu tenant or e-mail domain joins the organisation, with which role."""

    queryset = SignInRule.objects.order_by("pk")
    serializer_class = SignInRuleSerializer
    permission_classes = [*OrgScopedViewMixin.permission_classes, IsOrgAdmin]


class SignInSettingsSerializer(serializers.ModelSerializer):
    class Meta:
        model = SignInSettings
        fields = ["password_login"]
        # The one setting: PUT and PATCH both carry it (an empty body is a 400, not a KeyError).
        extra_kwargs = {"password_login": {"required": True}}

    def validate_password_login(self, value: bool) -> bool:
        problem = password_off_problem(organization=self.context["org"], password_login=value)
        if problem is not None:
            raise serializers.ValidationError(str(problem))
        return value


class SignInSettingsView(OrgScopedViewMixin, generics.GenericAPIView):
    """Whether the organisation's members may sign in with a password (on unless switched off)."""

    queryset = SignInSettings.objects.all()
    serializer_class = SignInSettingsSerializer
    permission_classes = [*OrgScopedViewMixin.permission_classes, IsOrgAdmin]

    def _current(self) -> SignInSettings:
        found = self.get_queryset().first()
        return found if found is not None else SignInSettings(organization=self.org)

    @extend_schema(responses=SignInSettingsSerializer)
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return Response(self.get_serializer(self._current()).data)

    @extend_schema(request=SignInSettingsSerializer, responses=SignInSettingsSerializer)
    def put(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        current = self._current()
        serializer = self.get_serializer(current, data=request.data)
        serializer.is_valid(raise_exception=True)
        current.password_login = serializer.validated_data["password_login"]
        saved = audited_save(instance=current, actor=request.user, ip_address=client_ip(request))
        return Response(self.get_serializer(saved).data)

    patch = put
