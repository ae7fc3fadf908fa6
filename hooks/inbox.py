"""What the approvals inbox shows about a request: its key arguments, a link to its conversation for those
allowed to see it, and why an approver's inbox is empty. Read-only helpers for the inbox views."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.urls import NoReverseMatch, reverse

from hooks.models import ApprovalRequest
from hooks.selectors import approval_pending_for_others
from platform_core.models import ADMIN_ROLES, Organization, Role

if TYPE_CHECKING:
    from django.contrib.auth.models import User

MAX_KEY_ARGUMENTS = 3
MAX_VALUE_CHARS = 40
# Words in an argument's name that say it is what an approver looks at first.
KEY_WORDS = frozenset(
    {"amount", "total", "price", "sum", "currency", "order", "po", "invoice", "supplier", "vendor",
     "customer", "payee", "account", "quantity", "qty"}
)  # fmt: skip
_WORD = re.compile(r"[A-Z]?[a-z]+|[0-9]+|[A-Z]+(?![a-z])")


def _is_key(name: str) -> bool:
    return any(word.lower() in KEY_WORDS for word in _WORD.findall(name))


def _shown(value: Any) -> str | None:
    if isinstance(value, str):
        text = value
    elif value is None or isinstance(value, bool | int | float):
        text = json.dumps(value)
    else:
        return None  # nested values are for the detail page
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def key_arguments(arguments: Any) -> list[tuple[str, str]]:
    """Up to three short ``(name, value)`` pairs of a call's arguments: amounts, currencies, orders and
    parties when it has them, else its first plain values (in the call's own order)."""
    if not isinstance(arguments, Mapping):
        return []
    plain = [(str(k), text) for k, v in arguments.items() if (text := _shown(v)) is not None]
    keys = [pair for pair in plain if _is_key(pair[0])]
    return (keys or plain)[:MAX_KEY_ARGUMENTS]


def conversation_link(*, approval: ApprovalRequest, user: User, role: str | None) -> str:
    """Where ``user`` can read the conversation that asked: the chat for its owner (the requester), the
    admin's read-only page for the organisation's admins; empty for everyone else."""
    if not approval.conversation_id:
        return ""
    try:
        if approval.requested_by_id is not None and approval.requested_by_id == user.pk:
            slug = Organization.objects.filter(pk=approval.organization_id).values_list("slug", flat=True)
            return reverse(
                "chat-conversation",
                kwargs={"org_slug": slug.first(), "conversation_id": approval.conversation_id},
            )
        if user.is_staff and (user.is_superuser or role in ADMIN_ROLES):
            return reverse("admin:agents_conversation_change", args=[approval.conversation_id])
    except NoReverseMatch:
        return ""
    return ""


@dataclass(frozen=True, slots=True)
class EmptyInbox:
    """Why an approver's list of pending requests is empty (``others`` wait for other approvers)."""

    for_approver: bool
    others: int


def empty_inbox(*, organization: Organization, user: User, role: str | None) -> EmptyInbox:
    """The explanation shown instead of an empty list of pending requests."""
    if role != Role.APPROVER:
        return EmptyInbox(for_approver=False, others=0)
    return EmptyInbox(
        for_approver=True, others=approval_pending_for_others(organization=organization, user=user)
    )
