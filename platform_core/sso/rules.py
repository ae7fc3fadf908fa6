"""The organisations' sign-in rules: who joins which organisation by single sign-on, and who may still
sign in with a password."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q, QuerySet

from platform_core.identity.linked_identities import link_feishu_identity
from platform_core.models import Membership, Organization, SignInRule, SignInSettings
from platform_core.services import MembershipRefused, membership_save
from platform_core.sso.identity import SsoIdentity
from platform_core.sso.providers import FEISHU


def approved_rules() -> QuerySet[SignInRule]:
    """Rules an operator approved: only these route sign-ins (a claim on a tenant or a domain needs
    proof first: issue 31)."""
    # Sign-in routing spans organisations: an identity finds its organisation through the rule.
    return SignInRule.objects.unscoped().filter(approved_at__isnull=False)


def sign_in_rules_matching(identity: SsoIdentity) -> list[SignInRule]:
    """The approved rules ``identity`` satisfies: its provider's rules for its Feishu tenant or a trusted
    domain."""
    match = Q()
    if identity.provider == FEISHU and identity.tenant_key:
        match |= Q(feishu_tenant_key=identity.tenant_key, email_domain="")
    if identity.provider != FEISHU and identity.email_domains:
        match |= Q(email_domain__in=sorted(identity.email_domains), feishu_tenant_key="")
    if not match:
        return []
    return list(
        approved_rules()
        .filter(match, provider=identity.provider)
        .select_related("organization")
        .order_by("pk")
    )


def existing_user_for(identity: SsoIdentity, rules: list[SignInRule]) -> Any | None:
    """The local account a first sign-in belongs to: an active member of an organisation whose rule the
    identity matched, with the same trusted e-mail address (one such account, or none)."""
    if not identity.trusted_emails or not rules:
        return None
    orgs = {r.organization_id for r in rules}
    email_match = Q()
    for email in identity.trusted_emails:
        email_match |= Q(email__iexact=email)
    users = list(
        get_user_model()
        .objects.filter(email_match, is_active=True, memberships__organization_id__in=orgs)
        .distinct()[:2]
    )
    return users[0] if len(users) == 1 else None


@dataclass(frozen=True, slots=True)
class SignInApplied:
    """What a sign-in changed: the organisations joined (existing memberships keep their role)."""

    joined: tuple[Organization, ...]


@transaction.atomic
def sign_in_apply(*, user: Any, identity: SsoIdentity, rules: list[SignInRule]) -> SignInApplied:
    """Make ``user`` a member of each matched rule's organisation it is not in yet (audited, the rule's
    role) and link a Feishu identity to the user."""
    joined: list[Organization] = []
    current = set(Membership.objects.filter(user=user).values_list("organization_id", flat=True))
    for rule in rules:
        if rule.organization_id in current:
            continue
        outcome = membership_save(organization=rule.organization, user=user, role=rule.role, actor=None)
        if not isinstance(outcome, MembershipRefused):
            current.add(rule.organization_id)
            joined.append(rule.organization)
    if identity.provider == FEISHU and identity.open_id:
        link_feishu_identity(
            user, open_id=identity.open_id, union_id=identity.union_id, tenant_key=identity.tenant_key
        )
    return SignInApplied(tuple(joined))


@dataclass(frozen=True, slots=True)
class PasswordLoginOff:
    """The user's organisations that sign in without passwords, and the providers they sign in with."""

    organizations: tuple[str, ...]
    providers: tuple[str, ...]


def _enforcing_org_ids() -> QuerySet[Any]:
    """Organisations whose password switch is off *and* that have an approved rule to sign in with
    instead (without one, switching passwords off would lock their members out altogether)."""
    return (
        SignInSettings.objects.filter(password_login=False)
        .filter(organization_id__in=approved_rules().values("organization_id"))
        .values("organization_id")
    )


def password_login_refusal(user: Any) -> PasswordLoginOff | None:
    """Why ``user`` may not sign in with a password: a member of an organisation that switched it off.

    Memberships are the person's own choice (an existing account joins only by accepting an
    invitation, or by signing in through the organisation's approved rule: issue 31), so another
    organisation cannot reach a person's sign-in. Superusers (the operators) always may, so a deployment
    cannot lock out its operators.
    """
    if user is None or getattr(user, "is_superuser", False) or not getattr(user, "pk", None):
        return None
    orgs = list(
        Organization.objects.filter(memberships__user=user, pk__in=_enforcing_org_ids()).order_by("name")
    )
    if not orgs:
        return None
    providers = (
        approved_rules()
        .filter(organization__in=orgs)
        .order_by("provider")
        .values_list("provider", flat=True)
        .distinct()
    )
    return PasswordLoginOff(tuple(o.name for o in orgs), tuple(providers))


def password_login_enabled(org: Organization) -> bool:
    """Whether members of ``org`` may sign in with a password (on unless its settings say off)."""
    return not SignInSettings.objects.filter(organization=org, password_login=False).exists()


def password_login_enforced_in(org_ids: list[int]) -> set[int]:
    """Which of ``org_ids`` refuse their members' passwords now (switched off, with an approved rule)."""
    return set(
        _enforcing_org_ids().filter(organization_id__in=org_ids).values_list("organization_id", flat=True)
    )
