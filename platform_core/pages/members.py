"""The web app's Members page (``/o/<slug>/members/``) for the organisation's owners and admins.

List members and pending invitations; invite by e-mail or by a Feishu or single sign-on identity (an
existing account joins only when the person accepts: issue 31); cancel an invitation; change a role;
remove; link a member's Feishu account by hand. Every write goes through the services of
:mod:`platform_core.identity.members.members`, :mod:`platform_core.services` and
:mod:`platform_core.identity.linked_identities` (audited, org-scoped). Another organisation's membership
answers 404; members without an admin role get 403.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse, reverse_lazy
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from platform_core.identity.linked_identities import (
    IdentityLinked,
    IdentityNotMember,
    identity_link_feishu_by_hand,
)
from platform_core.identity.members.invitations import (
    member_invitation_cancel,
    member_invitation_get_for_org,
    member_invitation_list_for_org,
)
from platform_core.identity.members.members import (
    MemberAdded,
    MemberInvited,
    MemberNotAdded,
    member_add_by_identity,
    member_get_for_org,
    member_invite_by_email,
    member_list_for_org,
)
from platform_core.models import ADMIN_ROLES, Membership, Organization, Role
from platform_core.request_meta import client_ip, signed_in_user
from platform_core.services import MembershipRefused, membership_remove, membership_save
from platform_core.tenancy.scoping import member_org_from_slug


class InviteForm(forms.Form):
    email = forms.EmailField(label=gettext_lazy("E-mail address"), max_length=254)
    role = forms.ChoiceField(label=gettext_lazy("Role"), choices=Role.choices, initial=Role.MEMBER)


class IdentityForm(forms.Form):
    identifier = forms.CharField(
        label=gettext_lazy("Feishu open_id, account id or e-mail"),
        max_length=254,
        help_text=gettext_lazy("Of someone who already signed in with Feishu or single sign-on."),
    )
    role = forms.ChoiceField(label=gettext_lazy("Role"), choices=Role.choices, initial=Role.MEMBER)


class RoleForm(forms.Form):
    role = forms.ChoiceField(label=gettext_lazy("Role"), choices=Role.choices)


class FeishuLinkForm(forms.Form):
    open_id = forms.RegexField(
        label=gettext_lazy("Feishu open_id"),
        regex=r"^ou_[A-Za-z0-9_-]{1,120}$",
        error_messages={"invalid": gettext_lazy("A Feishu open_id looks like ou_1a2b3c.")},
    )


def _admin_org(request: HttpRequest, org_slug: str) -> tuple[Organization, Membership]:
    org, membership = member_org_from_slug(user=signed_in_user(request), slug=org_slug)
    if membership.role not in ADMIN_ROLES:
        raise PermissionDenied(_("Only the organisation's owners and admins manage its members."))
    return org, membership


def _page(request: HttpRequest, org: Organization, membership: Membership, **extra: Any) -> HttpResponse:
    status = extra.pop("status", 200)
    members = list(member_list_for_org(organization=org))
    context = {
        "org": org,
        "members": members,
        "invitations": list(member_invitation_list_for_org(organization=org)),
        "roles": Role.choices,
        "own_membership_id": membership.pk,
        "invite_form": extra.pop("invite_form", None) or InviteForm(),
        "identity_form": extra.pop("identity_form", None) or IdentityForm(),
        **extra,
    }
    return render(request, "platform_core/members.html", context, status=status)


def _back(org: Organization) -> HttpResponse:
    return redirect(reverse("members-page", kwargs={"org_slug": org.slug}))


def _say(request: HttpRequest, outcome: Any, success: str) -> None:
    if isinstance(outcome, MembershipRefused | MemberNotAdded):
        messages.error(request, outcome.message)
    elif isinstance(outcome, MemberInvited):
        messages.success(
            request,
            _("%(user)s was invited: they become a member when they accept.")
            % {"user": outcome.invitation.user.get_username()},
        )
    else:
        messages.success(request, success)


def _invitations_url(request: HttpRequest) -> str:
    return request.build_absolute_uri(reverse("invitations"))


@login_required
def members_page(request: HttpRequest, org_slug: str) -> HttpResponse:
    org, membership = _admin_org(request, org_slug)
    return _page(request, org, membership)


def _admin_form(
    form_class: type[forms.Form], context_name: str
) -> Callable[[Callable[..., HttpResponse | None]], Callable[..., HttpResponse]]:
    """A form an owner or admin posts from the Members page: an invalid one shows the page again with its
    errors (as ``context_name``, status 400); a valid one goes to ``view(request, org, membership, form)``,
    then the page is shown again unless the view answers itself."""

    def decorate(view: Callable[..., HttpResponse | None]) -> Callable[..., HttpResponse]:
        @login_required
        @require_POST
        @functools.wraps(view)
        def posted(request: HttpRequest, org_slug: str) -> HttpResponse:
            org, membership = _admin_org(request, org_slug)
            form = form_class(request.POST)
            if not form.is_valid():
                return _page(request, org, membership, **{context_name: form}, status=400)
            return view(request, org, membership, form) or _back(org)

        return posted

    return decorate


@_admin_form(InviteForm, "invite_form")
def member_invite(
    request: HttpRequest, org: Organization, membership: Membership, form: InviteForm
) -> HttpResponse | None:
    def link(uidb64: str, token: str) -> str:
        path = reverse("member-join", kwargs={"org_slug": org.slug, "uidb64": uidb64, "token": token})
        return request.build_absolute_uri(path)

    outcome = member_invite_by_email(
        organization=org,
        actor=signed_in_user(request),
        email=form.cleaned_data["email"],
        role=form.cleaned_data["role"],
        set_password_link=link,
        invitations_url=_invitations_url(request),
        ip_address=client_ip(request),
    )
    if isinstance(outcome, MemberAdded) and outcome.set_password_url:
        # Shown once, on this response only: it is not stored anywhere we could show it again.
        return _page(request, org, membership, invited=outcome)
    _say(request, outcome, _("%(email)s was added.") % {"email": form.cleaned_data["email"]})
    return None


@_admin_form(IdentityForm, "identity_form")
def member_add_identity(
    request: HttpRequest, org: Organization, membership: Membership, form: IdentityForm
) -> None:
    outcome = member_add_by_identity(
        organization=org,
        actor=signed_in_user(request),
        identifier=form.cleaned_data["identifier"],
        role=form.cleaned_data["role"],
        invitations_url=_invitations_url(request),
        ip_address=client_ip(request),
    )
    name = outcome.membership.user.get_username() if isinstance(outcome, MemberAdded) else ""
    _say(request, outcome, _("%(user)s was added.") % {"user": name})


def _admin_action(view: Callable[..., None]) -> Callable[..., HttpResponse]:
    """A change an owner or admin posts from the Members page: ``view(request, org, **url_kwargs)`` makes
    it (and says how it went), then the page is shown again."""

    @login_required
    @require_POST
    @functools.wraps(view)
    def action(request: HttpRequest, org_slug: str, **kwargs: Any) -> HttpResponse:
        org, _own = _admin_org(request, org_slug)
        view(request, org, **kwargs)
        return _back(org)

    return action


@_admin_action
def member_cancel_invitation(request: HttpRequest, org: Organization, invitation_id: int) -> None:
    invitation = member_invitation_get_for_org(organization=org, invitation_id=invitation_id)
    if invitation is None:
        raise Http404("No such invitation.")
    name = invitation.user.get_username()
    member_invitation_cancel(
        invitation=invitation, actor=signed_in_user(request), ip_address=client_ip(request)
    )
    messages.success(request, _("The invitation of %(user)s was withdrawn.") % {"user": name})


def _member_or_404(org: Organization, membership_id: int) -> Membership:
    target = member_get_for_org(organization=org, membership_id=membership_id)
    if target is None:
        raise Http404("No such member.")
    return target


@_admin_action
def member_set_role(request: HttpRequest, org: Organization, membership_id: int) -> None:
    target = _member_or_404(org, membership_id)
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, _("Choose one of the roles."))
        return
    outcome = membership_save(
        organization=org,
        user=target.user,
        role=form.cleaned_data["role"],
        actor=signed_in_user(request),
        ip_address=client_ip(request),
    )
    _say(request, outcome, _("%(user)s's role was changed.") % {"user": target.user.get_username()})


@_admin_action
def member_remove(request: HttpRequest, org: Organization, membership_id: int) -> None:
    target = _member_or_404(org, membership_id)
    name = target.user.get_username()
    outcome = membership_remove(
        membership=target, actor=signed_in_user(request), ip_address=client_ip(request)
    )
    _say(request, outcome, _("%(user)s was removed from the organisation.") % {"user": name})


@_admin_action
def member_link_feishu(request: HttpRequest, org: Organization, membership_id: int) -> None:
    target = _member_or_404(org, membership_id)
    form = FeishuLinkForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(str(e) for e in form.errors["open_id"]))
        return
    outcome = identity_link_feishu_by_hand(
        organization=org,
        actor=signed_in_user(request),
        user=target.user,
        open_id=form.cleaned_data["open_id"],
        ip_address=client_ip(request),
    )
    if isinstance(outcome, IdentityLinked):
        messages.success(
            request, _("%(user)s's Feishu account was linked.") % {"user": target.user.get_username()}
        )
    elif isinstance(outcome, IdentityNotMember):
        raise Http404("No such member.")
    else:
        messages.error(
            request, _("This Feishu open_id already belongs to another user; nothing was changed.")
        )


class MemberJoinView(auth_views.PasswordResetConfirmView):
    """An invited member chooses a password through the one-time link (Django's password-reset token).

    https://docs.djangoproject.com/en/5.2/topics/auth/default/#django.contrib.auth.views.PasswordResetConfirmView
    """

    template_name = "platform_core/member_join.html"
    success_url = reverse_lazy("login")
    post_reset_login = False

    def dispatch(self, *args: Any, **kwargs: Any) -> HttpResponseBase:
        # The link names an organisation: it only opens for a member of it (404 otherwise, like every
        # page of an organisation), so another organisation's slug tells nothing about its people.
        user = self.get_user(kwargs["uidb64"])
        org_slug = kwargs.pop("org_slug")
        if user is None or not Membership.objects.filter(user=user, organization__slug=org_slug).exists():
            raise Http404("No such invitation.")
        return super().dispatch(*args, **kwargs)

    def form_valid(self, form: Any) -> HttpResponse:
        response = super().form_valid(form)
        messages.success(self.request, _("Your password is set: sign in."))
        return response
