"""Writes of an organisation's member groups: create, change, add and remove members, delete.

Each is one transaction with one audit row (``member_group.*``) that names the group and its members'
ids, never more: a description is recorded only as ``"changed"``. Only current members of the
organisation (people, not organisation keys' service users) can be put in a group; anyone else is
refused with a ``ValidationError`` on ``members``, and a taken or empty name on ``name``.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from platform_core.audit.audited import CHANGED
from platform_core.audit.log import audit_log_write
from platform_core.identity.api_keys.keys import without_service_users
from platform_core.models import MemberGroup, Membership, Organization

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class Keep(Enum):
    """An argument of :func:`member_group_update` left out: the setting keeps its value."""

    KEEP = "keep"


KEEP = Keep.KEEP
NAME_MAX_LENGTH = MemberGroup._meta.get_field("name").max_length or 100


def group_members_error(*, organization_id: int, users: Iterable[User]) -> str | None:
    """Why ``users`` cannot be put in a group of the organisation (``None``: they are all its members)."""
    ids = {user.pk for user in users}
    if not ids:
        return None
    members = Membership.objects.filter(organization_id=organization_id, user_id__in=ids)
    found = set(without_service_users(members, path="user__").values_list("user_id", flat=True))
    if ids - found:
        return _("Only members of the organisation can be put in a group.")
    return None


def group_name_error(*, organization_id: int, name: str, group_id: int | None) -> str | None:
    """Why ``name`` cannot name a group of the organisation (``None``: it can); ``group_id`` is the group
    being renamed."""
    if not name:
        return _("A group needs a name.")
    if len(name) > NAME_MAX_LENGTH:
        return _("A group's name has at most %(limit)d characters.") % {"limit": NAME_MAX_LENGTH}
    taken = MemberGroup.objects.for_org(organization_id).filter(name=name)
    if group_id is not None:
        taken = taken.exclude(pk=group_id)
    if taken.exists():
        return _("This organisation already has a group of this name.")
    return None


def _refuse(
    *, organization_id: int, name: str | Keep, members: list[User] | Keep, group_id: int | None
) -> None:
    errors: dict[str, str] = {}
    if name is not KEEP:
        problem = group_name_error(organization_id=organization_id, name=name, group_id=group_id)
        if problem:
            errors["name"] = problem
    if members is not KEEP:
        problem = group_members_error(organization_id=organization_id, users=members)
        if problem:
            errors["members"] = problem
    if errors:
        raise ValidationError(errors)


def _member_ids(group: MemberGroup) -> list[str]:
    return sorted(str(pk) for pk in group.members.values_list("pk", flat=True))


def _lock(group: MemberGroup) -> MemberGroup:
    return MemberGroup.objects.for_org(group.organization_id).select_for_update().get(pk=group.pk)


def _organization(group: MemberGroup) -> Organization:
    return Organization.objects.get(pk=group.organization_id)


@transaction.atomic
def member_group_create(
    *,
    organization: Organization,
    name: str,
    description: str = "",
    members: Iterable[User] = (),
    actor: User | None,
    ip_address: str | None = None,
) -> MemberGroup:
    """A new group of ``organization`` with ``members`` (its members only), audited."""
    name, users = (name or "").strip(), list(members)
    _refuse(organization_id=organization.pk, name=name, members=users, group_id=None)
    group = MemberGroup(organization=organization, name=name, description=(description or "").strip())
    group.full_clean(exclude=["members"])
    group.save()
    group.members.set(users)
    audit_log_write(
        organization=organization,
        actor=actor,
        action="member_group.created",
        target=group,
        after={"name": group.name, "members": _member_ids(group)},
        ip_address=ip_address,
    )
    return group


@transaction.atomic
def member_group_update(
    *,
    group: MemberGroup,
    actor: User | None,
    name: str | Keep = KEEP,
    description: str | Keep = KEEP,
    members: Iterable[User] | Keep = KEEP,
    ip_address: str | None = None,
) -> MemberGroup:
    """Change the name, description or the whole list of members given (the others keep their values),
    audited with what changed; nothing changed writes nothing. ``group`` is updated too."""
    if name is not KEEP:
        name = (name or "").strip()
    if description is not KEEP:
        description = (description or "").strip()
    users = members if isinstance(members, Keep) else list(members)
    _refuse(organization_id=group.organization_id, name=name, members=users, group_id=group.pk)
    stored = _lock(group)
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    if name is not KEEP and name != stored.name:
        before["name"], after["name"] = stored.name, name
        stored.name = name
    if description is not KEEP and description != stored.description:
        after["description"] = CHANGED
        stored.description = description
    if after:
        stored.full_clean(exclude=["members"])
        stored.save(update_fields=["name", "description"])
    if not isinstance(users, Keep):
        old = _member_ids(stored)
        stored.members.set(users)
        new = _member_ids(stored)
        if new != old:
            before["members"], after["members"] = old, new
    if after:
        audit_log_write(
            organization=_organization(stored),
            actor=actor,
            action="member_group.updated",
            target=stored,
            before=before,
            after=after,
            ip_address=ip_address,
        )
    group.name, group.description = stored.name, stored.description
    return stored


@transaction.atomic
def member_group_members_add(
    *, group: MemberGroup, users: Iterable[User], actor: User | None, ip_address: str | None = None
) -> MemberGroup:
    """Put ``users`` (members of the organisation) in the group, audited with the ids added; those already
    in it are left as they are (nothing new writes nothing)."""
    users = list(users)
    _refuse(organization_id=group.organization_id, name=KEEP, members=users, group_id=group.pk)
    stored = _lock(group)
    present = set(stored.members.values_list("pk", flat=True))
    added = [user for user in users if user.pk not in present]
    if added:
        stored.members.add(*added)
        audit_log_write(
            organization=_organization(stored),
            actor=actor,
            action="member_group.members_added",
            target=stored,
            after={"name": stored.name, "members": sorted(str(user.pk) for user in added)},
            ip_address=ip_address,
        )
    return stored


@transaction.atomic
def member_group_members_remove(
    *, group: MemberGroup, user_ids: Iterable[int], actor: User | None, ip_address: str | None = None
) -> MemberGroup:
    """Take the users ``user_ids`` out of the group, audited with the ids removed (ids not in it change
    nothing)."""
    stored = _lock(group)
    wanted = set(user_ids)
    removed = sorted(pk for pk in stored.members.values_list("pk", flat=True) if pk in wanted)
    if removed:
        stored.members.remove(*removed)
        audit_log_write(
            organization=_organization(stored),
            actor=actor,
            action="member_group.members_removed",
            target=stored,
            before={"name": stored.name, "members": [str(pk) for pk in removed]},
            ip_address=ip_address,
        )
    return stored


@transaction.atomic
def member_group_delete(*, group: MemberGroup, actor: User | None, ip_address: str | None = None) -> None:
    """Delete the group, audited with its name and members: what it gave them (a knowledge base's
    access) is gone with it."""
    stored = _lock(group)
    audit_log_write(
        organization=_organization(stored),
        actor=actor,
        action="member_group.deleted",
        target=stored,
        before={"name": stored.name, "members": _member_ids(stored)},
        ip_address=ip_address,
    )
    stored.delete()
