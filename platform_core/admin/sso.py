"""Admin pages of single sign-on: each organisation's sign-in rules and its password sign-in switch
(org-scoped and audited like every configurable model). allauth's own admin pages are not offered:
providers are the deployment's (settings), and linked accounts are listed as linked identities."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import allauth.account.admin  # noqa: F401  (registers its pages first, so they can be taken off)
import allauth.socialaccount.admin  # noqa: F401
from allauth.account.models import EmailAddress
from allauth.socialaccount.models import SocialAccount, SocialApp, SocialToken
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.text import capfirst
from django.utils.translation import gettext_lazy as _

from platform_core.admin.base import AuditedAdmin
from platform_core.models import SignInRule, SignInSettings
from platform_core.request_meta import client_ip
from platform_core.sso.approval import sign_in_rule_approve, sign_in_rule_withdraw
from platform_core.sso.login import AdminPasswordSignInForm
from platform_core.sso.validation import (
    NO_PROVIDER,
    password_off_problem,
    provider_choices,
    sign_in_rule_clean,
)

for _model in (SocialApp, SocialAccount, SocialToken, EmailAddress):
    if admin.site.is_registered(_model):
        admin.site.unregister(_model)

# The admin's own sign-in page explains a password refused by an organisation's setting too.
admin.site.login_form = AdminPasswordSignInForm


class SignInRuleForm(forms.ModelForm):
    provider = forms.ChoiceField(
        label=capfirst(SignInRule._meta.get_field("provider").verbose_name),
        choices=(),
        help_text=SignInRule._meta.get_field("provider").help_text,
    )

    class Meta:
        model = SignInRule
        fields = ["organization", "provider", "feishu_tenant_key", "email_domain", "role"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "provider" not in self.fields:  # a saved rule's match is read-only
            return
        choices = provider_choices()
        current = self.instance.provider if self.instance.pk else None
        if current and current not in dict(choices):
            choices.append((current, str(_("%(id)s (not configured)") % {"id": current})))
        provider = self.fields["provider"]
        assert isinstance(provider, forms.ChoiceField)
        provider.choices = choices
        if not choices:  # nothing to choose: say what the operator configures (issue 32)
            self.fields["provider"].help_text = NO_PROVIDER
            self.fields["provider"].error_messages["required"] = NO_PROVIDER

    def _get_validation_exclusions(self) -> set[str]:
        """Without a valid provider the model's match constraint is not checked: which match a rule
        needs depends on its provider, and the provider's own error says what to do."""
        excluded: set[str] = super()._get_validation_exclusions()  # type: ignore[misc]  # BaseModelForm's hook, missing from django-stubs
        if "provider" in self.errors:
            excluded |= {"feishu_tenant_key", "email_domain"}
        return excluded

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        if not data.get("provider"):
            return data
        outcome = sign_in_rule_clean(
            provider=data["provider"],
            feishu_tenant_key=data.get("feishu_tenant_key") or "",
            email_domain=data.get("email_domain") or "",
        )
        if isinstance(outcome, dict):
            raise ValidationError(outcome)
        data["feishu_tenant_key"], data["email_domain"] = outcome.feishu_tenant_key, outcome.email_domain
        return data


@admin.register(SignInRule)
class SignInRuleAdmin(AuditedAdmin):
    """Which Feishu tenants and e-mail domains join the organisation by single sign-on, with which role.

    A rule is a claim: it routes sign-ins once an operator approved it (superusers: the actions below;
    or ``manage.py sign_in_rules``). What a saved rule matches never changes, only its role (issue 31).
    """

    form = SignInRuleForm
    list_display = [
        "provider",
        "feishu_tenant_key",
        "email_domain",
        "role",
        "approved",
        "organization",
        "created_at",
    ]
    list_filter = ["provider", "role"]
    search_fields = ["feishu_tenant_key", "email_domain"]
    actions = ["approve_rules", "withdraw_approval"]

    @admin.display(boolean=True, description=_("approved"))
    def approved(self, obj: SignInRule) -> bool:
        return obj.approved_at is not None

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        fields = list(super().get_readonly_fields(request, obj))
        if obj is None:
            return fields
        return [*fields, "organization", "provider", "feishu_tenant_key", "email_domain", "approved_at"]

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        if not request.user.is_superuser:  # only operators approve claims
            actions.pop("approve_rules", None)
            actions.pop("withdraw_approval", None)
        return actions

    @admin.action(description=_("Approve the selected rules' claims (operators)"))
    def approve_rules(self, request: HttpRequest, queryset: QuerySet[SignInRule]) -> None:
        self._each_rule(request, queryset, sign_in_rule_approve)
        self.message_user(request, _("The selected rules were approved."), messages.SUCCESS)

    @admin.action(description=_("Withdraw the selected rules' approval (operators)"))
    def withdraw_approval(self, request: HttpRequest, queryset: QuerySet[SignInRule]) -> None:
        self._each_rule(request, queryset, sign_in_rule_withdraw)
        self.message_user(request, _("The selected rules' approval was withdrawn."), messages.SUCCESS)

    def _each_rule(
        self, request: HttpRequest, queryset: QuerySet[SignInRule], change: Callable[..., SignInRule]
    ) -> None:
        """An operator's ``change`` (approve or withdraw) of every selected rule, audited as theirs."""
        if not request.user.is_superuser:
            raise PermissionDenied
        for rule in queryset:
            change(rule=rule, actor=request.user, ip_address=client_ip(request))


class SignInSettingsForm(forms.ModelForm):
    class Meta:
        model = SignInSettings
        fields = ["organization", "password_login"]

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        org = data.get("organization") or (
            self.instance.organization if self.instance.organization_id else None
        )
        if org is not None and data.get("password_login") is not None:
            problem = password_off_problem(organization=org, password_login=data["password_login"])
            if problem is not None:
                raise ValidationError({"password_login": problem})
        return data


@admin.register(SignInSettings)
class SignInSettingsAdmin(AuditedAdmin):
    """Whether the organisation's members may still sign in with a username and password."""

    form = SignInSettingsForm
    list_display = ["organization", "password_login"]
    list_filter = ["password_login"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        fields = list(super().get_readonly_fields(request, obj))
        return [*fields, "organization"] if obj is not None else fields
