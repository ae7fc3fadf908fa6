"""Read helpers of the tenancy core."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db.models import QuerySet
from django.http import Http404

from platform_core.models import ADMIN_ROLES, AuditLog, Membership, Organization

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def organizations_for_user(*, user: User, roles: frozenset[str] | None = None) -> QuerySet[Organization]:
    """Organisations ``user`` belongs to (with one of ``roles`` when given). Superusers get all."""
    if not user.is_authenticated or not user.is_active:
        return Organization.objects.none()
    if user.is_superuser:
        return Organization.objects.all()
    memberships = Membership.objects.filter(user=user)
    if roles is not None:
        memberships = memberships.filter(role__in=roles)
    return Organization.objects.filter(pk__in=memberships.values("organization_id"))


def admin_organizations_for_user(*, user: User) -> QuerySet[Organization]:
    """Organisations whose Django admin ``user`` may use: owner/admin role, or superuser."""
    return organizations_for_user(user=user, roles=ADMIN_ROLES)


def membership_for(*, user: User, organization: Organization) -> Membership | None:
    if not user.is_authenticated:
        return None
    return Membership.objects.filter(user=user, organization=organization).first()


def organization_get_for_user(*, user: User, slug: str) -> Organization:
    """The organisation ``slug`` if ``user`` may see it; otherwise the same 404 as for a missing one."""
    org = organizations_for_user(user=user).filter(slug=slug).first()
    if org is None:
        raise Http404("No such organisation.")
    return org


def audit_log_list_for_org(*, organization: Organization) -> QuerySet[AuditLog]:
    return AuditLog.objects.for_org(organization).select_related("actor").order_by("-created_at", "-id")
