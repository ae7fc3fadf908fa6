"""Who decides an approval request, and how people are named to the chat, the inbox and the admin.

A policy names its approvers as people: platform users, and roles (every member holding one). One that
names neither goes to every active approver, admin and owner of its organisation. The set is frozen on
the request when it is created (or re-sent), so later membership changes do not quietly widen who may
decide it. On Feishu a listed user decides through their linked Feishu account
(:mod:`platform_core.identity.linked_identities`); raw ``open_id``s remain for people without a platform account.

Two kinds of user never decide: an organisation key's service user (an identity of a program, not a
person), and the person who asked (:func:`request_deciders` leaves them out; if they were the only
approver, the request goes to the owners and admins other than them, and waits for one if there is none).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from django.utils.translation import gettext as _

from hooks.models import APPROVER_ROLE_CHOICES, ApprovalPolicy, ApprovalRequest, RequesterExclusion
from hooks.selectors import DECIDER_ROLES
from platform_core.identity.api_keys.keys import without_service_users
from platform_core.identity.linked_identities import feishu_open_ids_for_users
from platform_core.models import ADMIN_ROLES, Organization, Role

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def organization_deciders(*, organization_id: int, roles: frozenset[str] = DECIDER_ROLES) -> QuerySet[User]:
    """The organisation's active members (people, not organisation keys' service users) with one of
    ``roles`` (the approver, admin or owner role), by username."""
    return without_service_users(
        get_user_model()
        .objects.filter(
            is_active=True,
            memberships__organization_id=organization_id,
            memberships__role__in=roles,
        )
        .distinct()
        .order_by("username")
    )


def _policy_roles(policy: ApprovalPolicy) -> list[str]:
    roles = policy.approver_roles if isinstance(policy.approver_roles, list) else []
    return [role for role in roles if role in APPROVER_ROLE_CHOICES]


def policy_names_people(policy: ApprovalPolicy) -> bool:
    """Whether ``policy`` lists approvers (users or roles) rather than leaving it to every decider."""
    return bool(_policy_roles(policy)) or (policy.pk is not None and policy.approver_users.exists())


def policy_approver_users(*, policy: ApprovalPolicy) -> list[User]:
    """The platform users a new request of ``policy`` goes to: the users it lists and the active members
    holding a role it lists, else every decider."""
    if policy.pk is None:
        return []
    listed = {u.pk: u for u in without_service_users(policy.approver_users.filter(is_active=True))}
    roles = _policy_roles(policy)
    if roles:
        holders = without_service_users(
            get_user_model().objects.filter(
                is_active=True,
                memberships__organization_id=policy.organization_id,
                memberships__role__in=roles,
            )
        )
        listed.update({u.pk: u for u in holders})
    if not listed and not roles and not policy.approver_users.exists():
        return list(organization_deciders(organization_id=policy.organization_id))
    return sorted(listed.values(), key=lambda u: u.get_username())


@dataclass(frozen=True, slots=True)
class RequestDeciders:
    """Who a new request asks (its frozen platform approvers), and whether its requester was left out."""

    users: list[User]
    exclusion: RequesterExclusion


def request_deciders(*, policy: ApprovalPolicy, requested_by_id: int | None) -> RequestDeciders:
    """:func:`policy_approver_users` without the requester. When the requester was the only one the
    policy asks (no other user, no Feishu ``open_id``), the owners and admins other than them."""
    users = policy_approver_users(policy=policy)
    if requested_by_id is None or all(u.pk != requested_by_id for u in users):
        return RequestDeciders(users, RequesterExclusion.NONE)
    others = [u for u in users if u.pk != requested_by_id]
    if others or policy.approver_open_ids:
        return RequestDeciders(others, RequesterExclusion.EXCLUDED)
    admins = organization_deciders(organization_id=policy.organization_id, roles=ADMIN_ROLES)
    return RequestDeciders(list(admins.exclude(pk=requested_by_id)), RequesterExclusion.ONLY_APPROVER)


def requester_note(approval: ApprovalRequest, *, approvers: Iterable[str]) -> str:
    """What the requester is told about who decides their request (empty: nothing to say)."""
    if approval.requester_exclusion == RequesterExclusion.EXCLUDED:
        return _("You asked for this call, so you cannot decide it: someone else must decide it.")
    if approval.requester_exclusion != RequesterExclusion.ONLY_APPROVER:
        return ""
    if not list(approvers):
        return _(
            "You are the only approver of this request, and you cannot decide your own request. There "
            "is no other owner or admin in the organisation: it waits for one to be added, or expires."
        )
    return _(
        "You are the only approver of this request, and you cannot decide your own request: it waits "
        "for an owner or admin other than you."
    )


def role_names(roles: Iterable[str]) -> list[str]:
    """Roles for people, in the active language."""
    labels = dict(Role.choices)
    return [str(labels.get(role, role)) for role in roles]


def approval_feishu_open_ids(approval: ApprovalRequest) -> list[str]:
    """Who may decide ``approval`` on its Feishu card: its approvers' linked ``open_id``s (usable in its
    organisation), then the raw ``open_id``s of people without a platform account."""
    user_ids = list(approval.approver_users.values_list("pk", flat=True))
    org = Organization(pk=approval.organization_id)
    linked = feishu_open_ids_for_users(org, user_ids) if user_ids else {}
    raw = [open_id for open_id in approval.approver_open_ids or [] if open_id not in linked.values()]
    return sorted(linked.values()) + raw


def person_name(user: User) -> str:
    """A person's name as the platform knows it: the full name, else the username."""
    full = user.get_full_name().strip() if hasattr(user, "get_full_name") else ""
    return full or user.get_username()


def feishu_name(open_id: str) -> str:
    """A person without a platform account, known only by their Feishu ``open_id``."""
    return _("Feishu user %(open_id)s") % {"open_id": open_id}


def approver_names(approval: ApprovalRequest) -> list[str]:
    """The request's approvers for people: platform users by name, then Feishu-only approvers."""
    users = [person_name(u) for u in approval.approver_users.order_by("username")]
    return users + [feishu_name(open_id) for open_id in approval.approver_open_ids or []]


@dataclass(frozen=True, slots=True)
class Audience:
    """Who a policy's requests will ask, as the policy form explains it."""

    listed: bool
    users: tuple[str, ...]
    open_ids: tuple[str, ...]
    card_to: str
    card_problem: str
    roles: tuple[str, ...] = ()
    on_feishu: tuple[str, ...] = ()


def policy_audience(*, policy: ApprovalPolicy) -> Audience:
    """Who will be asked by a request of ``policy`` now, and where its Feishu card would go."""
    listed = policy_names_people(policy)
    users: Iterable[User] = (
        policy_approver_users(policy=policy)
        if policy.pk
        else (organization_deciders(organization_id=policy.organization_id) if policy.organization_id else ())
    )
    channel = policy.channel if policy.channel_id else None
    chat = (policy.chat_id or (channel.default_chat_id if channel else "")).strip()
    problem = ""
    if channel is None or not channel.is_active:
        problem = _("No card will be sent: the policy names no active Feishu channel.")
    elif not chat:
        problem = _("No card will be sent: neither the policy nor its channel names a chat.")
    users = list(users)
    linked = (
        feishu_open_ids_for_users(Organization(pk=policy.organization_id), [u.pk for u in users])
        if users and policy.organization_id
        else {}
    )
    return Audience(
        listed=listed,
        users=tuple(person_name(u) for u in users),
        open_ids=tuple(policy.approver_open_ids or ()),
        card_to=chat if not problem else "",
        card_problem=problem,
        roles=tuple(role_names(_policy_roles(policy))),
        on_feishu=tuple(person_name(u) for u in users if u.pk in linked),
    )
