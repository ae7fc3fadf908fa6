"""The one check of a sign-in rule and of switching password sign-in off (admin and API alike)."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from platform_core.models import Organization, SignInRule
from platform_core.sso.adapter import settings_apps
from platform_core.sso.buttons import provider_display_name
from platform_core.sso.providers import FEISHU

NO_PROVIDER = _(
    "No sign-in provider is configured for this deployment, so no rule can be added yet. The operator "
    "sets FEISHU_SSO_APP_ID and FEISHU_SSO_APP_SECRET (Feishu) or OIDC_PROVIDERS (OpenID Connect) in the "
    "environment and restarts the platform."
)


def provider_choices() -> list[tuple[str, str]]:
    """The deployment's configured providers (Feishu first), as ``(id, name)``."""
    choices = {(app.provider_id or app.provider): provider_display_name(app) for app in settings_apps()}
    return sorted(choices.items(), key=lambda item: (item[0] != FEISHU, item[1]))


@dataclass(frozen=True, slots=True)
class RuleValues:
    """A rule's match, normalised (tenant key trimmed, domain lower case without ``@``)."""

    feishu_tenant_key: str
    email_domain: str


def sign_in_rule_clean(
    *, provider: str, feishu_tenant_key: str, email_domain: str
) -> RuleValues | dict[str, Promise]:
    """The normalised match of a rule, or the problems by field name."""
    tenant = feishu_tenant_key.strip()
    domain = email_domain.strip().lower().lstrip("@")
    if provider == FEISHU:
        if not tenant:
            return {"feishu_tenant_key": _("A Feishu rule needs the tenant key it admits.")}
        if domain:
            return {"email_domain": _("A Feishu rule admits a tenant, not an e-mail domain.")}
    else:
        if not domain or "@" in domain or "." not in domain:
            return {"email_domain": _("Enter the e-mail domain this rule admits, e.g. example.com.")}
        if tenant:
            return {
                "feishu_tenant_key": _("Only Feishu rules admit a tenant; this rule admits an e-mail domain.")
            }
    return RuleValues(tenant, domain)


def password_off_problem(*, organization: Organization, password_login: bool) -> Promise | None:
    """Why password sign-in may not be switched off now: without an approved rule nobody could sign in."""
    rules = SignInRule.objects.filter(organization=organization)
    if password_login or rules.filter(approved_at__isnull=False).exists():
        return None
    if rules.exists():
        return _(
            "Your sign-in rules are waiting for an operator's approval: until one is approved, the members "
            "of this organisation could not sign in at all."
        )
    return _(
        "Add a sign-in rule first: without one, the members of this organisation could not sign in at all."
    )


MATCH_FIELDS = ("provider", "feishu_tenant_key", "email_domain")
MATCH_FIXED = _(
    "What a rule matches cannot change (an operator approved this claim): remove the rule and add another."
)


def rule_match_changed(*, rule: SignInRule, values: dict[str, str]) -> bool:
    """Whether ``values`` would change what the saved ``rule`` claims (it never may: remove the rule and
    add another, which needs a new approval)."""
    return rule.pk is not None and any(
        field in values and values[field] != getattr(rule, field) for field in MATCH_FIELDS
    )
