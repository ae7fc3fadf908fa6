"""Pages of the approval machinery: the Feishu card callback and the web approvals inbox.

The callback (``POST /integrations/feishu/<channel_id>/callback/``) has no session and no CSRF token: it is
authenticated by Feishu's signature, encryption and tokens (FEISHU.md section 4), checked in order, and
answers every path, errors included, with a toast so the clicker never sees Feishu's generic error.

The inbox (``/o/<org_slug>/approvals/``) lists requests for the organisation's approvers, shows one with
its arguments, and records approve/reject decisions with a comment through ``approval_decide``, the same
service the callback and the API use.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from hooks.approvers import approver_names, person_name, requester_note
from hooks.callback_handler import handle_feishu_callback
from hooks.duties import is_own_request
from hooks.feishu.callback import MAX_CALLBACK_BYTES, too_large_rejected
from hooks.inbox import conversation_link, empty_inbox, key_arguments
from hooks.models import ApprovalRequest, ApprovalStatus, CardStatus, DecidedVia
from hooks.selectors import (
    DECIDER_ROLES,
    approval_get_for_org,
    approval_list_for_user,
    approval_visible_to,
    approval_web_decider_ok,
    channel_get_active,
)
from hooks.services import ApprovalForbidden, approval_decide
from platform_core.models import Membership, Organization
from platform_core.request_meta import client_ip, signed_in_user
from platform_core.tenancy.scoping import member_org_from_slug

logger = logging.getLogger(__name__)

INBOX_PAGE_SIZE = 50
STATUS_FILTERS = ["pending", "approved", "rejected", "expired", "cancelled", "all"]


@csrf_exempt
@require_POST
def feishu_callback(request: HttpRequest, channel_id: Any) -> HttpResponse:
    """Feishu's ``card.action.trigger`` callback and URL verification for one channel."""
    channel = channel_get_active(channel_id=channel_id)
    if channel is None:
        return JsonResponse(
            {"toast": {"type": "error", "content": "Unknown or inactive channel."}}, status=404
        )
    with translation.override(channel.language):
        raw_body = _callback_body(request)
        if raw_body is None:
            rejected = too_large_rejected(_declared_length(request), language=channel.language)
            return JsonResponse(
                rejected.reply(), status=rejected.http_status, json_dumps_params={"ensure_ascii": False}
            )
        status, body = handle_feishu_callback(
            channel=channel, raw_body=raw_body, headers=dict(request.headers.items()), now=timezone.now()
        )
    return JsonResponse(body, status=status, json_dumps_params={"ensure_ascii": False})


def _declared_length(request: HttpRequest) -> int | None:
    try:
        return int(request.META.get("CONTENT_LENGTH") or "")
    except ValueError:
        return None


def _callback_body(request: HttpRequest) -> bytes | None:
    """The callback's raw body, or ``None`` when it is over :data:`MAX_CALLBACK_BYTES` (told by its
    Content-Length, or found while reading), without reading more than that."""
    declared = _declared_length(request)
    if declared is not None and declared > MAX_CALLBACK_BYTES:
        return None
    try:
        body = request.read(MAX_CALLBACK_BYTES + 1)
    except (RequestDataTooBig, OSError):
        return None
    return None if len(body) > MAX_CALLBACK_BYTES else body


def _inbox_org(request: HttpRequest, org_slug: str) -> tuple[Organization, Membership]:
    """The URL's organisation for one of its approvers, admins or owners (404 for non-members, 403 for
    members without such a role)."""
    org, membership = member_org_from_slug(user=signed_in_user(request), slug=org_slug)
    if membership.role not in DECIDER_ROLES:
        raise PermissionDenied(_("Only approvers, admins and owners can open the approvals inbox."))
    return org, membership


@login_required
@require_GET
def approvals_inbox(request: HttpRequest, org_slug: str) -> HttpResponse:
    """The approval requests the user may see, pending first by default."""
    org, membership = _inbox_org(request, org_slug)
    user = signed_in_user(request)
    status = request.GET.get("status", "pending")
    if status not in STATUS_FILTERS:
        status = "pending"
    approvals = approval_list_for_user(organization=org, user=user)
    if status != "all":
        approvals = approvals.filter(status=status)
    page = Paginator(approvals, INBOX_PAGE_SIZE).get_page(request.GET.get("page"))
    empty = None
    if not page.object_list and status == "pending":
        empty = empty_inbox(organization=org, user=user, role=membership.role)
    return render(
        request,
        "hooks/approvals_inbox.html",
        {
            "org": org,
            "page": page,
            "rows": [(approval, key_arguments(approval.arguments)) for approval in page.object_list],
            "empty": empty,
            "status": status,
            "status_filters": [(s, _status_label(s)) for s in STATUS_FILTERS],
        },
    )


def _status_label(status: str) -> str:
    if status == "all":
        return _("All")
    return str(ApprovalStatus(status).label)


def _visible(request: HttpRequest, org: Organization, approval_id: Any) -> ApprovalRequest:
    approval = approval_get_for_org(organization=org, approval_id=approval_id)
    visible = approval_list_for_user(organization=org, user=signed_in_user(request))
    if not visible.filter(pk=approval.pk).exists():
        raise Http404("No such approval request.")
    return approval


@login_required
@require_GET
def approval_page(request: HttpRequest, org_slug: str, approval_id: Any) -> HttpResponse:
    """One request: the call, its arguments (redacted), its state, and the decision form. Its requester
    may open it too (read-only), from the chat's waiting card."""
    user = signed_in_user(request)
    org, membership = member_org_from_slug(user=user, slug=org_slug)
    approval = approval_get_for_org(organization=org, approval_id=approval_id)
    if not approval_visible_to(approval=approval, user=user):
        raise Http404("No such approval request.")
    is_decider = membership.role in DECIDER_ROLES
    approvers = approver_names(approval)
    own = approval.is_pending and is_own_request(approval=approval, user=user)
    can_decide = is_decider and approval.is_pending and approval_web_decider_ok(approval=approval, user=user)
    return render(
        request,
        "hooks/approval_detail.html",
        {
            "org": org,
            "approval": approval,
            "can_decide": can_decide,
            "is_decider": is_decider,
            "approvers": approvers,
            "own_request": own,
            "requester_note": requester_note(approval, approvers=approvers) if own else "",
            "requester": person_name(approval.requested_by) if approval.requested_by is not None else "",
            "conversation_url": conversation_link(approval=approval, user=user, role=membership.role),
            "card_failed": approval.card_status in (CardStatus.FAILED, CardStatus.UPDATE_FAILED),
            "arguments_json": json.dumps(approval.arguments, ensure_ascii=False, indent=2, default=str),
        },
    )


@login_required
@require_POST
def approval_decide_page(request: HttpRequest, org_slug: str, approval_id: Any) -> HttpResponse:
    """Approve or reject from the inbox (POST ``decision`` and ``comment``)."""
    org, _membership = _inbox_org(request, org_slug)
    approval = _visible(request, org, approval_id)
    decision = request.POST.get("decision", "")
    detail = reverse("approvals-inbox-detail", kwargs={"org_slug": org.slug, "approval_id": approval.pk})
    if decision not in ("approve", "reject"):
        messages.error(request, _("Choose approve or reject."))
        return redirect(detail)
    try:
        result = approval_decide(
            approval=approval,
            decision=decision,
            via=DecidedVia.WEB,
            actor=signed_in_user(request),
            comment=request.POST.get("comment", ""),
            ip_address=client_ip(request),
        )
    except ApprovalForbidden as refused:
        raise PermissionDenied(refused.message) from None
    if result.changed:
        text = _("Approved.") if result.approval.status == ApprovalStatus.APPROVED else _("Rejected.")
        messages.success(request, text)
    else:
        messages.warning(
            request,
            _("This request was already %(status)s; nothing was changed.")
            % {"status": result.approval.get_status_display().lower()},
        )
    return redirect(detail)
