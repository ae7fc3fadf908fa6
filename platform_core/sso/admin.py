"""Admin pages of single sign-on: each organisation's sign-in rules and its password sign-in switch
(org-scoped and audited like every configurable model). allauth's own admin pages are not offered:
providers are the deployment's (settings), and linked accounts are listed as linked identities."""

from __future__ import annotations

from typing import Any

import allauth.account.admin  # noqa: F401  (registers its pages first, so they can be taken off)
import allauth.socialaccount.admin  # noqa: F401
from allauth.account.models import EmailAddress
from allauth.socialaccount.models import SocialAccount, SocialApp, SocialToken
from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from platform_core.admin_base import AuditedAdmin
from platform_core.models import SignInRule, SignInSettings
from platform_core.sso.adapter import settings_apps
from platform_core.sso.buttons import provider_display_name
from platform_core.sso.login import AdminPasswordSignInForm
from platform_core.sso.providers import FEISHU

for _model in (SocialApp, SocialAccount, SocialToken, EmailAddress):
    if admin.site.is_registered(_model):
        admin.site.unregister(_model)

# The admin's own sign-in page explains a password refused by an organisation's setting too.
admin.site.login_form = AdminPasswordSignInForm


def provider_choices() -> list[tuple[str, str]]:
    """The deployment's configured providers (Feishu first), as ``(id, name)``."""
    choices = {(app.provider_id or app.provider): provider_display_name(app) for app in settings_apps()}
    ordered = sorted(choices.items(), key=lambda item: (item[0] != FEISHU, item[1]))
    return ordered


class SignInRuleForm(forms.ModelForm):
    provider = forms.ChoiceField(label=_("provider"), choices=())

    class Meta:
        model = SignInRule
        fields = ["organization", "provider", "feishu_tenant_key", "email_domain", "role"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = provider_choices()
        current = self.instance.provider if self.instance.pk else None
        if current and current not in dict(choices):
            choices.append((current, str(_("%(id)s (not configured)") % {"id": current})))
        self.fields["provider"].choices = choices

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        provider = data.get("provider")
        tenant = (data.get("feishu_tenant_key") or "").strip()
        domain = (data.get("email_domain") or "").strip().lower().lstrip("@")
        if provider == FEISHU:
            if not tenant:
                raise ValidationError(
                    {"feishu_tenant_key": _("A Feishu rule needs the tenant key it admits.")}
                )
            if domain:
                raise ValidationError(
                    {"email_domain": _("A Feishu rule admits a tenant, not an e-mail domain.")}
                )
        elif provider:
            if not domain or "@" in domain or "." not in domain:
                raise ValidationError(
                    {"email_domain": _("Enter the e-mail domain this rule admits, e.g. example.com.")}
                )
            if tenant:
                raise ValidationError(
                    {
                        "feishu_tenant_key": _(
                            "Only Feishu rules admit a tenant; this rule admits an e-mail domain."
                        )
                    }
                )
        data["feishu_tenant_key"], data["email_domain"] = tenant, domain
        return data


@admin.register(SignInRule)
class SignInRuleAdmin(AuditedAdmin):
    """Which Feishu tenants and e-mail domains join the organisation by single sign-on, with which role."""

    form = SignInRuleForm
    list_display = ["provider", "feishu_tenant_key", "email_domain", "role", "organization", "created_at"]
    list_filter = ["provider", "role"]
    search_fields = ["feishu_tenant_key", "email_domain"]


class SignInSettingsForm(forms.ModelForm):
    class Meta:
        model = SignInSettings
        fields = ["organization", "password_login"]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        org = data.get("organization") or (
            self.instance.organization if self.instance.organization_id else None
        )
        if org is not None and data.get("password_login") is False:
            if not SignInRule.objects.filter(organization=org).exists():
                raise ValidationError(
                    {
                        "password_login": _(
                            "Add a sign-in rule first: without one, the members of this organisation "
                            "could not sign in at all."
                        )
                    }
                )
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
