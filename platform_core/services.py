"""Write services of the tenancy core. Each is one transaction and writes its own audit row."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from platform_core.models import ADMIN_ROLES, ApiToken, AuditLog, Membership, Organization, Role


def audit_log_write(
    *,
    organization: Organization,
    actor: AbstractBaseUser | None,
    action: str,
    target: models.Model | None = None,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    ip_address: str | None = None,
) -> AuditLog:
    """Append one audit row. Call it inside the transaction of the change it records."""
    return AuditLog.objects.create(
        organization=organization,
        actor=actor if actor is not None and actor.is_authenticated else None,
        action=action,
        target_type=target._meta.label_lower if target is not None else "",
        target_id=str(target.pk) if target is not None else "",
        target_repr=str(target)[:300] if target is not None else "",
        before=before,
        after=after,
        ip_address=ip_address or None,
    )


def _read_only_state(org: Organization) -> dict[str, Any]:
    return {"read_only": org.read_only, "read_only_reason": org.read_only_reason}


@transaction.atomic
def organization_set_read_only(
    *,
    organization: Organization,
    actor: AbstractBaseUser | None,
    enabled: bool,
    reason: str = "",
    ip_address: str | None = None,
) -> Organization:
    """Switch read-only mode. Turning it on needs a reason; every change writes an audit row.

    Setting the state it already has changes nothing and writes nothing.
    """
    reason = (reason or "").strip()
    if enabled and not reason:
        raise ValidationError({"read_only_reason": _("A reason is required to turn on read-only mode.")})
    org = Organization.objects.select_for_update().get(pk=organization.pk)
    before = _read_only_state(org)
    new_reason = reason if enabled else ""
    if org.read_only == enabled and org.read_only_reason == new_reason:
        return org
    org.read_only = enabled
    org.read_only_reason = new_reason
    org.read_only_changed_by = actor if actor is not None and actor.is_authenticated else None
    org.read_only_changed_at = timezone.now()
    org.save(update_fields=["read_only", "read_only_reason", "read_only_changed_by", "read_only_changed_at"])
    audit_log_write(
        organization=org,
        actor=actor,
        action="organization.read_only.enabled" if enabled else "organization.read_only.disabled",
        target=org,
        before=before,
        after=_read_only_state(org),
        ip_address=ip_address,
    )
    organization.refresh_from_db()
    return org


@transaction.atomic
def organization_set_approval_cooldown(
    *, organization: Organization, actor: AbstractBaseUser | None, hours: int, ip_address: str | None = None
) -> Organization:
    """Set the separation-of-duties cooldown (hours; 0 turns it off), audited. The change itself counts as
    changing approval configuration, and a lowered value stays in force for the hours it had."""
    org = Organization.objects.select_for_update().get(pk=organization.pk)
    before = org.approval_config_cooldown_hours
    if before == hours:
        return org
    org.approval_config_cooldown_hours = hours
    org.full_clean(validate_unique=False, validate_constraints=False)
    org.save(update_fields=["approval_config_cooldown_hours"])
    audit_log_write(
        organization=org,
        actor=actor,
        action="organization.approval_cooldown.changed",
        target=org,
        before={"approval_config_cooldown_hours": before},
        after={"approval_config_cooldown_hours": hours},
        ip_address=ip_address,
    )
    organization.approval_config_cooldown_hours = hours
    return org


@transaction.atomic
def organization_create(*, slug: str, name: str, actor: AbstractBaseUser | None = None) -> Organization:
    """Create an organisation and record it in its own audit log."""
    org = Organization(slug=slug, name=name)
    org.full_clean()
    org.save()
    audit_log_write(
        organization=org,
        actor=actor,
        action="organization.created",
        target=org,
        after={"slug": slug, "name": name},
    )
    return org


@transaction.atomic
def membership_set(
    *,
    organization: Organization,
    user: AbstractBaseUser,
    role: str,
    actor: AbstractBaseUser | None = None,
) -> Membership:
    """Give ``user`` ``role`` in ``organization`` (creating or changing the membership).

    Org admins and owners need ``is_staff`` to open the Django admin, so it is granted here.
    """
    if role not in Role.values:
        raise ValidationError({"role": _("Unknown role: %(role)s") % {"role": role}})
    membership, created = Membership.objects.select_for_update().get_or_create(
        organization=organization, user=user, defaults={"role": role}
    )
    before = None if created else {"role": membership.role}
    if not created and membership.role != role:
        membership.role = role
        membership.save(update_fields=["role"])
    if role in ADMIN_ROLES and not user.is_staff:
        user.is_staff = True
        user.save(update_fields=["is_staff"])
    if created or before != {"role": role}:
        audit_log_write(
            organization=organization,
            actor=actor,
            action="membership.set",
            target=membership,
            before=before,
            after={"user": user.get_username(), "role": role},
        )
    return membership


def user_get_or_create(*, username: str, password: str | None = None, email: str = "") -> AbstractBaseUser:
    """Fetch a user by name, creating it (with ``password`` when given) if it does not exist."""
    User = get_user_model()
    user, created = User.objects.get_or_create(username=username, defaults={"email": email})
    if password:
        user.set_password(password)
        user.save(update_fields=["password"])
    elif created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


def api_token_issue(*, user: AbstractBaseUser, name: str = "") -> tuple[ApiToken, str]:
    """Issue a Bearer token; the raw value is returned once and only its hash is stored."""
    return ApiToken.issue(user=user, name=name)
