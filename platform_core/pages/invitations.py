"""``/invitations/``: the signed-in person's invitations into organisations, to accept or decline
(issue 31). Only the invited person sees or answers one; anyone else's answers 404."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from platform_core.identity.members.invitations import (
    member_invitation_accept,
    member_invitation_decline,
    member_invitation_get_for_user,
    member_invitation_list_for_user,
)
from platform_core.identity.members.outcomes import InvitationAccepted
from platform_core.models import MembershipInvitation
from platform_core.request_meta import client_ip, signed_in_user
from platform_core.sso.rules import password_login_enforced_in


@login_required
def invitations_page(request: HttpRequest) -> HttpResponse:
    invitations = list(member_invitation_list_for_user(user=signed_in_user(request)))
    enforced = password_login_enforced_in([i.organization_id for i in invitations])
    rows = [{"invitation": i, "password_off": i.organization_id in enforced} for i in invitations]
    return render(request, "platform_core/invitations.html", {"rows": rows})


def _own_or_404(request: HttpRequest, invitation_id: int) -> MembershipInvitation:
    invitation = member_invitation_get_for_user(user=signed_in_user(request), invitation_id=invitation_id)
    if invitation is None:
        raise Http404("No such invitation.")
    return invitation


@login_required
@require_POST
def invitation_accept(request: HttpRequest, invitation_id: int) -> HttpResponse:
    invitation = _own_or_404(request, invitation_id)
    outcome = member_invitation_accept(
        invitation=invitation, user=signed_in_user(request), ip_address=client_ip(request)
    )
    if isinstance(outcome, InvitationAccepted):
        org = outcome.membership.organization
        messages.success(request, _("You are now a member of %(org)s.") % {"org": org.name})
        return redirect("chat-home", org_slug=org.slug)
    messages.error(request, outcome.message)
    return redirect("invitations")


@login_required
@require_POST
def invitation_decline(request: HttpRequest, invitation_id: int) -> HttpResponse:
    invitation = _own_or_404(request, invitation_id)
    name = invitation.organization.name
    member_invitation_decline(
        invitation=invitation, user=signed_in_user(request), ip_address=client_ip(request)
    )
    messages.success(request, _("You declined the invitation to %(org)s.") % {"org": name})
    return redirect("invitations")
