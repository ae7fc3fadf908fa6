"""Linked identities: which platform user a Feishu or OIDC account belongs to.

A Feishu sign-in links the account for good (``link_feishu_identity``); an org admin may link a member's
``open_id`` by hand for a member who never signs in with Feishu (``identity_link_feishu_by_hand``). Card
clicks are matched to users with ``user_for_feishu_open_id``, which only answers members of the
organisation and only counts a hand-made link inside the organisation that made it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from platform_core.models import LinkedIdentity, Membership, Organization
from platform_core.services import audit_log_write

if TYPE_CHECKING:
    from django.contrib.auth.models import User

FEISHU = "feishu"


def oidc_provider(provider_id: str) -> str:
    """The ``provider`` value of an identity from the OpenID Connect provider ``provider_id``."""
    return f"oidc:{provider_id}"


@transaction.atomic
def link_feishu_identity(
    user: Any, *, open_id: str, union_id: str = "", tenant_key: str = ""
) -> LinkedIdentity:
    """Link the Feishu account ``open_id`` to ``user`` after a Feishu sign-in proved it is theirs.

    Signing in is proof of ownership, so it takes over a link an admin made by hand (to whichever user),
    and refreshes ``union_id``, ``tenant_key`` and the last-seen time.
    """
    identity, _created = LinkedIdentity.objects.select_for_update().get_or_create(
        provider=FEISHU, subject=open_id, defaults={"user": user, "open_id": open_id}
    )
    identity.user = user
    identity.open_id = open_id
    identity.union_id = union_id or identity.union_id
    identity.tenant_key = tenant_key or identity.tenant_key
    identity.organization = None
    identity.last_seen_at = timezone.now()
    identity.save()
    return identity


def user_for_feishu_open_id(org: Organization, open_id: str) -> Any | None:
    """The member of ``org`` whose linked Feishu identity has ``open_id``, or ``None``.

    Only members of ``org`` are answered, and a link made by hand counts only in the organisation whose
    admin made it.
    """
    identity = feishu_identity_in_org(org, open_id)
    return identity.user if identity is not None else None


def feishu_identity_in_org(org: Organization | int, open_id: str) -> LinkedIdentity | None:
    """The linked identity behind ``open_id`` that counts in ``org`` (see :func:`user_for_feishu_open_id`)."""
    if not open_id:
        return None
    return (
        LinkedIdentity.objects.select_related("user")
        .filter(open_id=open_id, user__is_active=True, user__memberships__organization=org)
        .filter(Q(organization__isnull=True) | Q(organization=org))
        .order_by(F("organization_id").asc(nulls_first=True))  # a sign-in link before a hand-made one
        .first()
    )


def feishu_open_ids_for_users(org: Organization, user_ids: list[int]) -> dict[int, str]:
    """The Feishu ``open_id`` of each of ``user_ids`` (members of ``org``) that has one usable in ``org``."""
    rows = (
        LinkedIdentity.objects.filter(
            user_id__in=user_ids, user__memberships__organization=org, user__is_active=True
        )
        .exclude(open_id="")
        .filter(Q(organization__isnull=True) | Q(organization=org))
        # the last row per user wins: hand-made links first, then links made by signing in
        .order_by(F("organization_id").desc(nulls_last=True), "created_at")
        .values_list("user_id", "open_id")
    )
    return dict(rows)


def identities_for_org(org: Organization) -> Any:
    """The identities of ``org``'s members that count in ``org`` (the admin's list)."""
    return (
        LinkedIdentity.objects.filter(user__memberships__organization=org)
        .filter(Q(organization__isnull=True) | Q(organization=org))
        .select_related("user")
        .distinct()
    )


@dataclass(frozen=True)
class IdentityLinked:
    identity: LinkedIdentity
    type: str = "linked"


@dataclass(frozen=True)
class IdentityNotMember:
    type: str = "not_member"


@dataclass(frozen=True)
class IdentityTaken:
    """The ``open_id`` already belongs to another user (by sign-in, or by a hand-made link)."""

    type: str = "taken"


IdentityLinkOutcome = IdentityLinked | IdentityNotMember | IdentityTaken


@transaction.atomic
def identity_link_feishu_by_hand(
    *,
    organization: Organization,
    actor: User | None,
    user: Any,
    open_id: str,
    ip_address: str | None = None,
) -> IdentityLinkOutcome:
    """An org admin links a member's Feishu ``open_id``; the link counts only in ``organization``."""
    open_id = open_id.strip()
    if not Membership.objects.filter(organization=organization, user=user).exists():
        return IdentityNotMember()
    existing = LinkedIdentity.objects.select_for_update().filter(provider=FEISHU, subject=open_id).first()
    if existing is not None:
        if existing.user_id == user.pk and existing.organization_id in (None, organization.pk):
            return IdentityLinked(existing)
        return IdentityTaken()
    identity = LinkedIdentity.objects.create(
        user=user, provider=FEISHU, subject=open_id, open_id=open_id, organization=organization
    )
    audit_log_write(
        organization=organization,
        actor=actor,
        action="linked_identity.created",
        target=identity,
        after={"user": user.get_username(), "provider": FEISHU, "open_id": open_id},
        ip_address=ip_address,
    )
    return IdentityLinked(identity)


@transaction.atomic
def identity_unlink_by_hand(
    *,
    organization: Organization,
    actor: User | None,
    identity: LinkedIdentity,
    ip_address: str | None = None,
) -> bool:
    """Remove a link ``organization``'s admin made by hand. Links made by signing in stay."""
    if identity.organization_id != organization.pk:
        return False
    before = {
        "user": identity.user.get_username(),
        "provider": identity.provider,
        "open_id": identity.open_id,
    }
    audit_log_write(
        organization=organization,
        actor=actor,
        action="linked_identity.deleted",
        target=identity,
        before=before,
        ip_address=ip_address,
    )
    identity.delete()
    return True
