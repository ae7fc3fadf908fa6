"""Reads of an organisation's member groups, every one scoped to the organisation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db.models import Count, QuerySet

from platform_core.models import MemberGroup, Membership, Organization

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def member_group_list_for_org(*, organization: Organization | int) -> QuerySet[MemberGroup]:
    """The organisation's groups by name, each with ``member_count``."""
    return (
        MemberGroup.objects.for_org(organization)
        .annotate(member_count=Count("members", distinct=True))
        .order_by("name", "pk")
    )


def member_group_get_for_org(*, organization: Organization | int, group_id: Any) -> MemberGroup | None:
    """One group of ``organization`` (``None`` for a missing one and another organisation's alike)."""
    try:
        return MemberGroup.objects.for_org(organization).filter(pk=group_id).first()
    except (ValueError, TypeError, ValidationError):
        return None


def member_groups_of_user(*, organization: Organization | int, user: User) -> QuerySet[MemberGroup]:
    """The groups of ``organization`` that ``user`` is in, while they are a member of it (none after)."""
    groups = MemberGroup.objects.for_org(organization)
    if not user.is_authenticated:
        return groups.none()
    current = Membership.objects.filter(organization=organization, user=user)
    if not current.exists():
        return groups.none()
    return groups.filter(members=user).order_by("name", "pk")
