"""Write services of the approval machinery. Each is one transaction with its own audit row; side effects
(channel-layer wake-ups, Celery card tasks) are sent with ``transaction.on_commit``.

Every status change of an :class:`ApprovalRequest` is a conditional update
(``filter(pk=..., status="pending").update(...)``): whichever process gets there first decides, every
other attempt sees ``changed=False`` and the final state.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from connectors.redaction import redact
from hooks import addressed
from hooks.approvers import request_deciders
from hooks.duties import (
    RESENT_ACTION,
    approval_cooldown_hours,
    feishu_click_in_cooldown,
    feishu_link_in_cooldown,
    is_own_request,
    user_in_cooldown,
)
from hooks.models import (
    ApprovalPolicy,
    ApprovalRequest,
    ApprovalStatus,
    CardStatus,
    DecidedVia,
    FeishuChannel,
    FeishuEventReceipt,
)
from hooks.selectors import approval_web_decider_ok
from hooks.signals import approval_card_due, approval_closed
from platform_core.identity.api_keys.keys import is_service_user
from platform_core.identity.linked_identities import feishu_identity_in_org
from platform_core.models import Organization
from platform_core.services import audit_log_write

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)

DECISIONS = {"approve": ApprovalStatus.APPROVED, "reject": ApprovalStatus.REJECTED}
MAX_COMMENT_CHARS = 2000
DECIDED_MESSAGE_TYPE = "approval.decided"


class Refusal(StrEnum):
    """Why a decision attempt was refused."""

    NOT_APPROVER = "not_approver"
    OTHER_CHANNEL = "other_channel"
    CREDENTIALS_CHANGED = "credentials_changed"
    COOLDOWN = "cooldown"
    OWN_REQUEST = "own_request"


class ApprovalForbidden(Exception):
    """The caller may not decide this request (``reason``, and ``message`` to show); nothing was changed."""

    def __init__(self, reason: Refusal, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def _refusal_message(reason: Refusal, hours: int = 0, *, on_feishu: bool = False) -> str:
    if reason == Refusal.OTHER_CHANNEL:
        return _(
            "This request was sent on another Feishu channel; nothing was changed. Decide it on the card "
            "of its own channel, or ask an admin to re-send it."
        )
    if reason == Refusal.CREDENTIALS_CHANGED:
        return _(
            "This channel's keys changed after the request was sent; nothing was changed. It must be "
            "re-sent by an admin before it can be decided here."
        )
    if reason == Refusal.COOLDOWN and on_feishu:
        return _(
            "This channel's keys, or its approvers, changed in the last %(hours)s hours, so this request "
            "cannot be decided by card yet (separation of duties); decide it in the web app. Nothing was "
            "changed."
        ) % {"hours": hours}
    if reason == Refusal.COOLDOWN:
        return _(
            "You changed the approval configuration in the last %(hours)s hours, so you cannot decide "
            "approval requests yet (separation of duties); nothing was changed."
        ) % {"hours": hours}
    if reason == Refusal.OWN_REQUEST:
        return _(
            "You asked for this call, so you cannot decide it (separation of duties): someone else must. "
            "Nothing was changed."
        )
    return _("You are not an approver of this request; nothing was changed.")


@dataclass(frozen=True, slots=True)
class ApprovalResend:
    """The outcome of a re-send: ``resent`` is False when the request was no longer pending."""

    approval: ApprovalRequest
    resent: bool


@dataclass(frozen=True, slots=True)
class ApprovalDecision:
    """The request after a decision attempt; ``changed`` is False when it had already been decided."""

    approval: ApprovalRequest
    changed: bool


def approval_group(approval_id: uuid.UUID | str) -> str:
    """The channel-layer group a waiting gate listens on."""
    return f"approval.{uuid.UUID(str(approval_id)).hex}"


def approval_notify(approval_id: uuid.UUID | str, status: str) -> None:
    """Tell the gate holding a call on ``approval_id``, in whatever process, that the request closed
    (best effort: the gate re-reads the request every ``APPROVAL_RECHECK_SECONDS`` anyway). Called by
    the run's wake-up (:mod:`agents.runs.wake`)."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(
            approval_group(approval_id),
            {"type": DECIDED_MESSAGE_TYPE, "approval_id": str(approval_id), "status": status},
        )
    except Exception:
        logger.warning("could not publish the decision of approval %s", approval_id, exc_info=True)


def _queue_card_send(approval_id: uuid.UUID) -> None:
    approval_card_due.send(sender=ApprovalRequest, approval_id=approval_id, change="send")


def _queue_card_update(approval_id: uuid.UUID) -> None:
    approval_card_due.send(sender=ApprovalRequest, approval_id=approval_id, change="update")


def _after_change(approval: ApprovalRequest, *, update_card: bool) -> None:
    approval_id, status, run_id = approval.pk, approval.status, approval.run_id
    # The one wake-up of whatever waits on the request (agents.runs.wake, above the guard rails).
    transaction.on_commit(
        lambda: approval_closed.send_robust(
            sender=ApprovalRequest, approval_id=approval_id, run_id=run_id, status=status
        )
    )
    if update_card and approval.feishu_message_id:
        transaction.on_commit(lambda: _queue_card_update(approval_id))


def call_digest(tool_name: str, shown_arguments: Mapping[str, Any]) -> str:
    """A key of one call as the approvers see it (the tool and its redacted arguments, key order aside)."""
    canonical = json.dumps(
        [tool_name, shown_arguments], sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str
    )
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def _binding(policy: ApprovalPolicy) -> dict[str, Any]:
    """Where and to whom a request of ``policy`` goes now: its channel and that channel's credentials
    version, the chat, the approvers (a snapshot, not a live link to the policy)."""
    # Read afresh (the policy may come from the configuration cache): the version bound must be current.
    channel = (
        FeishuChannel.objects.filter(
            pk=policy.channel_id, organization_id=policy.organization_id, is_active=True
        ).first()
        if policy.channel_id
        else None
    )
    chat_id = (policy.chat_id or (channel.default_chat_id if channel else "")).strip()
    open_ids = list(policy.approver_open_ids or [])
    # Without Feishu approvers the card still goes to the chat (with no buttons): people see it there.
    card_status = CardStatus.NONE if channel is None else CardStatus.QUEUED if chat_id else CardStatus.NO_CHAT
    return {
        "channel": channel,
        "channel_credentials_version": channel.credentials_version if channel else None,
        "chat_id": chat_id,
        "approver_open_ids": open_ids,
        "card_status": card_status,
    }


@transaction.atomic
def approval_request_create(
    *,
    organization_id: int,
    policy: ApprovalPolicy,
    tool_name: str,
    arguments: Mapping[str, Any],
    tool_call_id: str = "",
    run_id: Any = None,
    conversation_id: str = "",
    agent_id: str = "",
    agent_name: str = "",
    requested_by_id: int | None = None,
    action_id: Any = None,
    secrets: tuple[str, ...] = (),
    now: datetime | None = None,
    hold_reason: Mapping[str, Any] | None = None,
) -> ApprovalRequest:
    """Hold one tool call for a decision: store it (arguments redacted) with why it was held
    (:mod:`hooks.hold_reasons`) and queue its Feishu card."""
    if policy.organization_id != organization_id:
        raise ValueError("the policy belongs to another organisation")
    now = now or timezone.now()
    binding = _binding(policy)
    shown = redact(dict(arguments), secrets)
    deciders = request_deciders(policy=policy, requested_by_id=requested_by_id)
    approval = ApprovalRequest.objects.create(
        organization_id=organization_id,
        policy=policy,
        policy_name=policy.name,
        run_id=run_id,
        conversation_id=str(conversation_id or ""),
        agent_id=str(agent_id or ""),
        agent_name=agent_name[:100],
        tool_call_id=tool_call_id[:128],
        tool_name=tool_name[:64],
        action_id=action_id,
        arguments=shown,
        hold_reason=dict(hold_reason or {}),
        call_digest=call_digest(tool_name[:64], shown),
        requested_by_id=requested_by_id,
        requester_exclusion=deciders.exclusion,
        created_at=now,
        expires_at=now + timedelta(seconds=policy.timeout_seconds),
        **binding,
    )
    approval.approver_users.set(deciders.users)
    if approval.card_status == CardStatus.QUEUED:
        transaction.on_commit(lambda: _queue_card_send(approval.pk))
    return approval


def _binding_audit_state(approval: ApprovalRequest) -> dict[str, Any]:
    return {
        "channel": str(approval.channel_id or ""),
        "channel_credentials_version": approval.channel_credentials_version,
        "approver_open_ids": list(approval.approver_open_ids or []),
        "approver_users": sorted(str(pk) for pk in approval.approver_users.values_list("pk", flat=True)),
    }


@transaction.atomic
def approval_resend(
    *, approval: ApprovalRequest, actor: User | None, ip_address: str | None = None
) -> ApprovalResend:
    """Re-bind a pending request to its policy's current channel, credentials and approvers, send a new
    card (a new Feishu message) and audit it. A request no longer pending, or without a policy, is left
    as it is (``resent=False``)."""
    current = (
        ApprovalRequest.objects.for_org(approval.organization_id).select_for_update().get(pk=approval.pk)
    )
    policy = ApprovalPolicy.objects.filter(
        pk=current.policy_id, organization_id=current.organization_id
    ).first()
    if current.status != ApprovalStatus.PENDING or policy is None:
        return ApprovalResend(current, False)
    before = _binding_audit_state(current)
    binding = _binding(policy)
    for name, value in binding.items():
        setattr(current, name, value)
    current.resend_count += 1
    current.feishu_message_id = ""
    current.card_error = ""
    current.save(
        update_fields=[*binding, "resend_count", "feishu_message_id", "card_error"],
    )
    deciders = request_deciders(policy=policy, requested_by_id=current.requested_by_id)
    current.approver_users.set(deciders.users)
    if deciders.exclusion != current.requester_exclusion:
        current.requester_exclusion = deciders.exclusion
        current.save(update_fields=["requester_exclusion"])
    audit_log_write(
        organization=Organization.objects.get(pk=current.organization_id),
        actor=actor,
        action=RESENT_ACTION,
        target=current,
        before=before,
        after=_binding_audit_state(current),
        ip_address=ip_address,
    )
    if current.card_status == CardStatus.QUEUED:
        transaction.on_commit(lambda: _queue_card_send(current.pk))
    return ApprovalResend(current, True)


def _decision_audit(approval: ApprovalRequest, actor: User | None, ip_address: str | None) -> None:
    audit_log_write(
        organization=Organization.objects.get(pk=approval.organization_id),
        actor=actor,
        action=f"approval.{approval.status}",
        target=approval,
        before={"status": ApprovalStatus.PENDING},
        after={
            "status": approval.status,
            "tool_name": approval.tool_name,
            "policy": approval.policy_name,
            "decided_via": approval.decided_via,
            "decided_by": approval.decider_label(),
            "decided_by_open_id": approval.decided_by_open_id,
            "comment": approval.comment,
            "run_id": str(approval.run_id or ""),
            "tool_call_id": approval.tool_call_id,
        },
        ip_address=ip_address,
    )


@transaction.atomic
def approval_decide(
    *,
    approval: ApprovalRequest,
    decision: str,
    via: str,
    actor: User | None = None,
    operator_open_id: str = "",
    channel: FeishuChannel | None = None,
    comment: str = "",
    ip_address: str | None = None,
    now: datetime | None = None,
) -> ApprovalDecision:
    """Approve or reject a pending request, exactly once.

    Feishu clicks (``via="feishu"``) count only on the ``channel`` the request was sent on, while that
    channel's credentials version is the one the request was bound to, and by an ``operator_open_id`` of
    the request's frozen Feishu approvers; the web app and the API (``via="web"``) by ``actor`` against
    its frozen platform approvers. With the organisation's cooldown on, whoever changed the approval
    configuration recently cannot decide (:mod:`hooks.duties`). Anyone else gets
    :class:`ApprovalForbidden` (nothing changes). A request that is already decided, or whose time is up,
    is returned unchanged (``changed=False``; an overdue one is expired).
    """
    if decision not in DECISIONS:
        raise ValueError("decision must be 'approve' or 'reject'")
    now = now or timezone.now()
    feishu_user: User | None = None
    if via == DecidedVia.FEISHU:
        feishu_user = _check_feishu_decider(approval, channel, operator_open_id, now)
    elif via == DecidedVia.WEB:
        if is_own_request(approval=approval, user=actor):
            raise ApprovalForbidden(Refusal.OWN_REQUEST, _refusal_message(Refusal.OWN_REQUEST))
        if actor is None or not approval_web_decider_ok(approval=approval, user=actor):
            raise ApprovalForbidden(Refusal.NOT_APPROVER, _refusal_message(Refusal.NOT_APPROVER))
        hours = approval_cooldown_hours(organization_id=approval.organization_id, now=now)
        if user_in_cooldown(user=actor, organization_id=approval.organization_id, hours=hours, now=now):
            raise ApprovalForbidden(Refusal.COOLDOWN, _refusal_message(Refusal.COOLDOWN, hours))
    else:
        raise ValueError("via must be 'feishu' or 'web'")
    approvals = ApprovalRequest.objects.for_org(approval.organization_id)
    current = approvals.select_related("decided_by").get(pk=approval.pk)
    if current.status == ApprovalStatus.PENDING and current.expires_at <= now:
        approval_expire(approval=current, now=now)
        current.refresh_from_db()
        return ApprovalDecision(current, False)
    status = DECISIONS[decision]
    updated = approvals.filter(pk=approval.pk, status=ApprovalStatus.PENDING).update(
        status=status,
        decided_by=actor if via == DecidedVia.WEB else feishu_user,
        decided_by_open_id=operator_open_id if via == DecidedVia.FEISHU else "",
        decided_via=via,
        comment=(comment or "").strip()[:MAX_COMMENT_CHARS],
        decided_at=now,
    )
    current = approvals.select_related("decided_by").get(pk=approval.pk)
    if not updated:
        return ApprovalDecision(current, False)
    _decision_audit(current, actor if via == DecidedVia.WEB else feishu_user, ip_address)
    # A click is answered with the new card in the callback reply; other paths PATCH the card.
    _after_change(current, update_card=via != DecidedVia.FEISHU)
    logger.info(
        "approval %s %s via %s", current.pk, current.status, via, extra={"org_id": current.organization_id}
    )
    return ApprovalDecision(current, True)


def _check_feishu_decider(
    approval: ApprovalRequest, channel: FeishuChannel | None, open_id: str, now: datetime
) -> User | None:
    """Refuse a click that may not decide; return the platform user it was matched to (if any).

    The clicker's ``open_id`` is matched to a member of the request's organisation through their linked
    Feishu identity; the click counts when that member is one of the request's approvers (listed, or
    holding a listed role, when it was created) or when the ``open_id`` itself is listed (a person
    without a platform account).
    """
    if channel is None or approval.channel_id != channel.pk:
        raise ApprovalForbidden(Refusal.OTHER_CHANNEL, _refusal_message(Refusal.OTHER_CHANNEL))
    if approval.channel_credentials_version != channel.credentials_version:
        raise ApprovalForbidden(Refusal.CREDENTIALS_CHANGED, _refusal_message(Refusal.CREDENTIALS_CHANGED))
    identity = feishu_identity_in_org(approval.organization_id, open_id) if open_id else None
    user = identity.user if identity is not None else None
    if is_own_request(approval=approval, user=user):
        # listed by ``open_id`` or not, the requester's own Feishu account never decides their request
        raise ApprovalForbidden(Refusal.OWN_REQUEST, _refusal_message(Refusal.OWN_REQUEST))
    user_ok = user is not None and approval_web_decider_ok(approval=approval, user=user)
    raw_ok = (
        bool(open_id)
        and open_id in (approval.approver_open_ids or [])
        and not (user is not None and is_service_user(user))
    )
    if not (user_ok or raw_ok):
        raise ApprovalForbidden(Refusal.NOT_APPROVER, _refusal_message(Refusal.NOT_APPROVER))
    hours = approval_cooldown_hours(organization_id=approval.organization_id, now=now)
    if feishu_click_in_cooldown(
        approval=approval, channel=channel, open_id=open_id, hours=hours, now=now
    ) or (identity is not None and feishu_link_in_cooldown(identity=identity, hours=hours, now=now)):
        raise ApprovalForbidden(Refusal.COOLDOWN, _refusal_message(Refusal.COOLDOWN, hours, on_feishu=True))
    if user is not None and user_in_cooldown(
        user=user, organization_id=approval.organization_id, hours=hours, now=now
    ):
        raise ApprovalForbidden(Refusal.COOLDOWN, _refusal_message(Refusal.COOLDOWN, hours))
    return user


def _close(approval: ApprovalRequest, status: str, now: datetime) -> bool:
    updated = (
        ApprovalRequest.objects.for_org(approval.organization_id)
        .filter(pk=approval.pk, status=ApprovalStatus.PENDING)
        .update(status=status, decided_at=now)
    )
    if not updated:
        return False
    approval.refresh_from_db()
    _decision_audit(approval, None, None)
    _after_change(approval, update_card=True)
    return True


@transaction.atomic
def approval_expire(*, approval: ApprovalRequest, now: datetime | None = None) -> bool:
    """Mark a pending request expired (True) unless a decision got there first (False)."""
    return _close(approval, ApprovalStatus.EXPIRED, now or timezone.now())


@transaction.atomic
def approval_cancel(*, approval: ApprovalRequest, now: datetime | None = None) -> bool:
    """Mark a pending request cancelled (the run stopped while waiting); False if already decided."""
    return _close(approval, ApprovalStatus.CANCELLED, now or timezone.now())


def approval_expire_overdue(*, now: datetime | None = None, limit: int = 500) -> int:
    """Expire every pending request whose time is up (the beat task); returns how many expired."""
    now = now or timezone.now()
    overdue = list(
        addressed.approvals()
        .filter(status=ApprovalStatus.PENDING, expires_at__lte=now)
        .order_by("expires_at")[:limit]
    )
    return sum(1 for approval in overdue if approval_expire(approval=approval, now=now))


def approval_card_mark_sent(*, approval_id: Any, message_id: str) -> None:
    addressed.approvals().filter(pk=approval_id).update(
        card_status=CardStatus.SENT, feishu_message_id=message_id[:100], card_error=""
    )


def approval_card_mark_failed(*, approval_id: Any, error: str) -> None:
    addressed.approvals().filter(pk=approval_id).update(card_status=CardStatus.FAILED, card_error=error[:500])


def approval_card_mark_skipped(*, approval_id: Any) -> None:
    """The request was decided before its card went out: no card will be sent."""
    addressed.approvals().filter(pk=approval_id, feishu_message_id="").update(
        card_status=CardStatus.SKIPPED, card_error=""
    )


def approval_card_mark_updated(*, approval_id: Any) -> None:
    addressed.approvals().filter(pk=approval_id).update(card_status=CardStatus.UPDATED, card_error="")


def approval_card_mark_update_failed(*, approval_id: Any, error: str) -> None:
    addressed.approvals().filter(pk=approval_id).update(
        card_status=CardStatus.UPDATE_FAILED, card_error=error[:500]
    )


def feishu_event_seen(*, channel: FeishuChannel, event_id: str, now: datetime | None = None) -> bool:
    """Record a callback's ``event_id``; True when it had been recorded before (a replay)."""
    try:
        with transaction.atomic():
            FeishuEventReceipt.objects.create(
                event_id=event_id[:128], channel=channel, received_at=now or timezone.now()
            )
    except IntegrityError:
        return True
    return False


def feishu_event_receipts_prune(*, older_than: timedelta = timedelta(days=1)) -> int:
    """Forget receipts older than any timestamp the callback still accepts."""
    deleted, _ = FeishuEventReceipt.objects.filter(received_at__lt=timezone.now() - older_than).delete()
    return deleted
