"""An operator's approval of a sign-in rule's claim (issue 31).

A rule claims a Feishu tenant or an e-mail domain; anyone can type one. Until an operator (a management
command, or a superuser in the admin) has checked that the organisation owns it and approved it, the rule
routes no sign-in. Approving and withdrawing are audited in the rule's organisation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from platform_core.audit.log import audit_log_write
from platform_core.models import SignInRule

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def _claim(rule: SignInRule) -> dict[str, Any]:
    return {
        "provider": rule.provider,
        "feishu_tenant_key": rule.feishu_tenant_key,
        "email_domain": rule.email_domain,
        "role": rule.role,
        "approved": rule.approved_at is not None,
    }


def _check_operator(actor: User | None) -> None:
    if actor is not None and not actor.is_superuser:
        raise PermissionError("only operators (superusers) approve sign-in rules")


def sign_in_rules_claiming_the_same(rule: SignInRule) -> QuerySet[SignInRule]:
    """Other organisations' approved rules with the same claim (the operator decides whether both may)."""
    return (
        SignInRule.objects.unscoped()  # across organisations: the operator compares their claims
        .filter(
            provider=rule.provider,
            feishu_tenant_key=rule.feishu_tenant_key,
            email_domain=rule.email_domain,
            approved_at__isnull=False,
        )
        .exclude(organization_id=rule.organization_id)
        .select_related("organization")
    )


def sign_in_rule_approve(
    *, rule: SignInRule, actor: User | None, ip_address: str | None = None
) -> SignInRule:
    """Approve ``rule``'s claim (``actor=None``: a management command), audited; approving an approved
    rule changes nothing."""
    return _set_approval(rule, actor, ip_address, approved=True)


def sign_in_rule_withdraw(
    *, rule: SignInRule, actor: User | None, ip_address: str | None = None
) -> SignInRule:
    """Withdraw ``rule``'s approval: it routes no sign-in from now on, audited."""
    return _set_approval(rule, actor, ip_address, approved=False)


@transaction.atomic
def _set_approval(
    rule: SignInRule, actor: User | None, ip_address: str | None, *, approved: bool
) -> SignInRule:
    """Approve (or withdraw) ``rule`` under a row lock, audited; a rule already so is returned as it is."""
    _check_operator(actor)
    locked = (
        SignInRule.objects.for_org(rule.organization_id)
        .select_for_update()
        .select_related("organization")
        .get(pk=rule.pk)
    )
    if (locked.approved_at is not None) == approved:
        return locked
    before = _claim(locked)
    if approved:
        locked.approved_at = timezone.now()
        locked.approved_by = actor if actor is not None and actor.is_authenticated else None
    else:
        locked.approved_at = None
        locked.approved_by = None
    locked.save(update_fields=["approved_at", "approved_by"])
    audit_log_write(
        organization=locked.organization,
        actor=actor,
        action="sign_in_rule.approved" if approved else "sign_in_rule.approval_withdrawn",
        target=locked,
        before=before,
        after=_claim(locked),
        ip_address=ip_address,
    )
    return locked
