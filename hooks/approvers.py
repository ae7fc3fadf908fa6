"""Who decides an approval request, and how people are named to the chat, the inbox and the admin.

A policy that lists platform approvers goes to them; one that lists nobody goes to every active
approver, admin and owner of its organisation. The set is frozen on the request when it is created (or
re-sent), so later membership changes do not quietly widen who may decide it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.db.models import QuerySet
from django.utils.translation import gettext as _

from hooks.models import ApprovalPolicy, ApprovalRequest
from hooks.selectors import DECIDER_ROLES


def organization_deciders(*, organization_id: int) -> QuerySet:
    """The organisation's active members with the approver, admin or owner role, by username."""
    return (
        get_user_model()
        .objects.filter(
            is_active=True,
            memberships__organization_id=organization_id,
            memberships__role__in=DECIDER_ROLES,
        )
        .distinct()
        .order_by("username")
    )


def policy_approver_users(*, policy: ApprovalPolicy) -> list[AbstractBaseUser]:
    """The platform users a new request of ``policy`` goes to: those it lists, else every decider."""
    listed = list(policy.approver_users.order_by("username"))
    if listed or policy.pk is None:
        return listed
    return list(organization_deciders(organization_id=policy.organization_id))


def person_name(user: AbstractBaseUser) -> str:
    """A person's name as the platform knows it: the full name, else the username."""
    full = user.get_full_name().strip() if hasattr(user, "get_full_name") else ""
    return full or user.get_username()


def feishu_name(open_id: str) -> str:
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


def policy_audience(*, policy: ApprovalPolicy) -> Audience:
    """Who will be asked by a request of ``policy`` now, and where its Feishu card would go."""
    listed = bool(policy.pk) and policy.approver_users.exists()
    users: Iterable[AbstractBaseUser] = (
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
    return Audience(
        listed=listed,
        users=tuple(person_name(u) for u in users),
        open_ids=tuple(policy.approver_open_ids or ()),
        card_to=chat if not problem else "",
        card_problem=problem,
    )
