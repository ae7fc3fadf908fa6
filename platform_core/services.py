"""Write services of the tenancy core. Each is one transaction and writes its own audit row.

``audit_log_write`` lives in :mod:`platform_core.audit.log` (API keys use it too) and is re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from platform_core.audit.log import audit_log_write
from platform_core.models import ADMIN_ROLES, ApiKey, MemberGroup, Membership, Organization, Role

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def _read_only_state(org: Organization) -> dict[str, Any]:
    return {"read_only": org.read_only, "read_only_reason": org.read_only_reason}


@transaction.atomic
def organization_set_read_only(
    *,
    organization: Organization,
    actor: User | None,
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
    *, organization: Organization, actor: User | None, hours: int, ip_address: str | None = None
) -> Organization:
    """Set the separation-of-duties cooldown (hours; 0 turns it off), audited. The change itself counts as
    changing approval configuration, and a lowered value stays in force for the hours it had."""
    return _organization_setting_set(
        organization=organization,
        actor=actor,
        field="approval_config_cooldown_hours",
        value=hours,
        action="organization.approval_cooldown.changed",
        ip_address=ip_address,
    )


@transaction.atomic
def organization_set_time_zone(
    *,
    organization: Organization,
    actor: User | None,
    time_zone: str,
    ip_address: str | None = None,
) -> Organization:
    """Set the organisation's time zone (an IANA name, validated), audited; the same zone changes nothing."""
    return _organization_setting_set(
        organization=organization,
        actor=actor,
        field="time_zone",
        value=time_zone,
        action="organization.time_zone.changed",
        ip_address=ip_address,
    )


@transaction.atomic
def organization_set_attachment_retention(
    *,
    organization: Organization,
    actor: User | None,
    days: int | None,
    ip_address: str | None = None,
) -> Organization:
    """Set how many days the chat's attachments are kept (``None``: until their conversation is deleted),
    audited; the same value changes nothing."""
    return _organization_setting_set(
        organization=organization,
        actor=actor,
        field="attachment_retention_days",
        value=days,
        action="organization.attachment_retention.changed",
        ip_address=ip_address,
    )


@transaction.atomic
def organization_set_memory_retention(
    *,
    organization: Organization,
    actor: User | None,
    days: int | None,
    ip_address: str | None = None,
) -> Organization:
    """Set how many days a person's memories are kept after they were last written or changed (``None``:
    until the person deletes them), audited; the same value changes nothing."""
    return _organization_setting_set(
        organization=organization,
        actor=actor,
        field="memory_retention_days",
        value=days,
        action="organization.memory_retention.changed",
        ip_address=ip_address,
    )


def _organization_setting_set(
    *,
    organization: Organization,
    actor: User | None,
    field: str,
    value: Any,
    action: str,
    ip_address: str | None,
) -> Organization:
    """Set one validated field of the organisation under its row lock, with its audit row; the same value
    changes nothing. ``organization`` (the caller's instance) is updated too."""
    org = Organization.objects.select_for_update().get(pk=organization.pk)
    before = getattr(org, field)
    if before == value:
        return org
    setattr(org, field, value)
    org.full_clean(validate_unique=False, validate_constraints=False)
    org.save(update_fields=[field])
    audit_log_write(
        organization=org,
        actor=actor,
        action=action,
        target=org,
        before={field: before},
        after={field: value},
        ip_address=ip_address,
    )
    setattr(organization, field, value)
    return org


@transaction.atomic
def organization_create(*, slug: str, name: str, actor: User | None = None) -> Organization:
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


@dataclass(frozen=True, slots=True)
class MembershipSaved:
    """A membership was created or its role changed (``changed`` False: it already had that role)."""

    membership: Membership
    changed: bool
    type: Literal["saved"] = "saved"


@dataclass(frozen=True, slots=True)
class MembershipRemoved:
    type: Literal["removed"] = "removed"


@dataclass(frozen=True, slots=True)
class MembershipRefused:
    """Why a membership change was refused: ``owner_only`` (only owners may grant, change or remove the
    owner role), ``last_owner`` (an organisation always keeps one owner) or ``service_user`` (an
    organisation API key's user is managed with its key, never as a member: issue 31)."""

    code: Literal["owner_only", "last_owner", "service_user"]
    message: str
    type: Literal["refused"] = "refused"


def user_is_service_user(user: User) -> bool:
    """Whether ``user`` is an organisation API key's service user (not a person: issue 31)."""
    return ApiKey.objects.filter(user_id=user.pk, organization__isnull=False).exists()


def service_user_refusal() -> MembershipRefused:
    return MembershipRefused(
        "service_user",
        _("This is an organisation API key's user: it is managed with its key, never as a member."),
    )


def _is_owner(user: User, organization: Organization) -> bool:
    return Membership.objects.filter(user=user, organization=organization, role=Role.OWNER).exists()


def membership_refusal(
    *,
    organization: Organization,
    user: User,
    role: str | None,
    actor: User | None,
) -> MembershipRefused | None:
    """Why ``actor`` may not give ``user`` ``role`` in ``organization`` (``None``: remove the membership).

    ``actor=None`` is the operator (a management command): only the last-owner rule applies to it.
    """
    current = (
        Membership.objects.filter(organization=organization, user=user).values_list("role", flat=True).first()
    )
    if current == role:
        return None
    # The operator (no actor) and superusers pass the owner rule; members need to be owners.
    if (
        Role.OWNER in (current, role)
        and actor is not None
        and not actor.is_superuser
        and not _is_owner(actor, organization)
    ):
        return MembershipRefused(
            "owner_only", _("Only an owner can make someone an owner, or change or remove an owner.")
        )
    if current == Role.OWNER:
        others = Membership.objects.filter(organization=organization, role=Role.OWNER).exclude(user=user)
        if not others.exists():
            return MembershipRefused(
                "last_owner",
                _(
                    "The organisation's last owner cannot leave or be demoted: make another member "
                    "owner first."
                ),
            )
    return None


def _staff_follow_role(user: User, *, was_admin: bool, is_admin: bool) -> None:
    """Owners and admins need ``is_staff`` to open the admin: granted on promotion; on demotion or
    removal withdrawn unless the user is an owner or admin elsewhere, or a superuser."""
    if is_admin:
        wanted = True
    elif was_admin:
        elsewhere = Membership.objects.filter(user=user, role__in=ADMIN_ROLES).exists()
        wanted = bool(user.is_superuser or elsewhere)
    else:
        return
    if user.is_staff != wanted:
        user.is_staff = wanted
        user.save(update_fields=["is_staff"])


def _member_state(membership: Membership) -> dict[str, Any]:
    return {"user": membership.user.get_username(), "role": membership.role}


def _member_groups_leave(membership: Membership) -> list[str]:
    """Take the member out of every group of their organisation; the names of those they were in."""
    groups = MemberGroup.objects.for_org(membership.organization_id).filter(members=membership.user_id)
    names = sorted(groups.values_list("name", flat=True))
    if names:
        MemberGroup.members.through.objects.filter(
            membergroup__organization_id=membership.organization_id, user_id=membership.user_id
        ).delete()
    return names


def _lock_owners(organization: Organization) -> None:
    # Two owners demoting each other at once must not leave the organisation without one.
    list(Membership.objects.select_for_update().filter(organization=organization, role=Role.OWNER))


@transaction.atomic
def membership_save(
    *,
    organization: Organization,
    user: User,
    role: str,
    actor: User | None,
    ip_address: str | None = None,
    authorised_by: User | None = None,
) -> MembershipSaved | MembershipRefused:
    """Add ``user`` to ``organization`` with ``role`` or change their role, audited; ``is_staff`` follows
    the role. Refused (nothing changes) when :func:`membership_refusal` says why, judged for
    ``authorised_by`` when given (the inviter, when a person accepts an invitation), else for ``actor``.
    An organisation key's service user is always refused."""
    if role not in Role.values:
        raise ValidationError({"role": _("Unknown role: %(role)s") % {"role": role}})
    if user_is_service_user(user):
        return service_user_refusal()
    _lock_owners(organization)
    judge = authorised_by if authorised_by is not None else actor
    refusal = membership_refusal(organization=organization, user=user, role=role, actor=judge)
    if refusal is not None:
        return refusal
    membership = Membership.objects.select_for_update().filter(organization=organization, user=user).first()
    if membership is not None and membership.role == role:
        _staff_follow_role(user, was_admin=False, is_admin=role in ADMIN_ROLES)
        return MembershipSaved(membership, False)
    before = None if membership is None else _member_state(membership)
    was_admin = membership is not None and membership.role in ADMIN_ROLES
    if membership is None:
        membership = Membership.objects.create(organization=organization, user=user, role=role)
    else:
        membership.role = role
        membership.save(update_fields=["role"])
    _staff_follow_role(user, was_admin=was_admin, is_admin=role in ADMIN_ROLES)
    audit_log_write(
        organization=organization,
        actor=actor,
        action="membership.created" if before is None else "membership.updated",
        target=membership,
        before=before,
        after=_member_state(membership),
        ip_address=ip_address,
    )
    return MembershipSaved(membership, True)


@transaction.atomic
def membership_remove(
    *, membership: Membership, actor: User | None, ip_address: str | None = None
) -> MembershipRemoved | MembershipRefused:
    """Remove a member from the organisation, audited; ``is_staff`` follows (see :func:`membership_save`).
    They leave the organisation's member groups too (named in the audit row): what a group gave them
    ends with their membership."""
    organization = Organization.objects.get(pk=membership.organization_id)
    _lock_owners(organization)
    refusal = membership_refusal(organization=organization, user=membership.user, role=None, actor=actor)
    if refusal is not None:
        return refusal
    before = _member_state(membership)
    groups = _member_groups_leave(membership)
    if groups:
        before["groups"] = groups
    audit_log_write(
        organization=organization,
        actor=actor,
        action="membership.deleted",
        target=membership,
        before=before,
        ip_address=ip_address,
    )
    was_admin = membership.role in ADMIN_ROLES
    user = membership.user
    membership.delete()
    _staff_follow_role(user, was_admin=was_admin, is_admin=False)
    return MembershipRemoved()


def membership_set(
    *,
    organization: Organization,
    user: User,
    role: str,
    actor: User | None = None,
) -> Membership:
    """Give ``user`` ``role`` in ``organization`` (the operator's path: ``add_member``, the demo).

    Raises ``ValidationError`` when :func:`membership_save` refuses.
    """
    outcome = membership_save(organization=organization, user=user, role=role, actor=actor)
    if isinstance(outcome, MembershipRefused):
        raise ValidationError(outcome.message, code=outcome.code)
    return outcome.membership


def user_get_or_create(*, username: str, password: str | None = None, email: str = "") -> User:
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
