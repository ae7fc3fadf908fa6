"""Admin pages of members and membership invitations (issue 31).

Members of the organisations the user administers are listed, re-roled and removed here; an existing
account is never added directly: it is **invited** (*Membership invitations → Add*) and joins when the
person accepts while signed in. Users are not tenant data (:mod:`platform_core.admin.members`): an org
admin names a user by exact username or e-mail address and can never browse, search, autocomplete or
prefill one who is not already a member of their organisations. Organisation API keys' service users
are neither listed nor invitable: they are managed with their keys.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

from platform_core.admin.base import OrgScopedAdmin, admin_visible_rows
from platform_core.admin.members import UserIdentifierField, username_prefill
from platform_core.identity.api_keys.keys import without_service_users
from platform_core.identity.members.invitations import (
    member_invitation_cancel,
    member_invitation_problem,
    member_invitation_send,
)
from platform_core.identity.members.outcomes import MemberNotAdded
from platform_core.models import Membership, MembershipInvitation
from platform_core.request_meta import client_ip, signed_in_user
from platform_core.services import MembershipRefused, membership_refusal, membership_remove, membership_save
from platform_core.tenancy.admin_orgs import admin_orgs


def _removal_refusal(membership: Membership, actor: Any) -> MembershipRefused | None:
    return membership_refusal(
        organization=membership.organization, user=membership.user, role=None, actor=actor
    )


class MembershipAdminForm(forms.ModelForm):
    """Refuses what the membership service would refuse (owner role by non-owners, the last owner)."""

    actor: Any = None

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        org = self.instance.organization if self.instance.organization_id else None
        user = self.instance.user if self.instance.user_id else None
        role = data.get("role")
        if org is not None and user is not None and role:
            refusal = membership_refusal(organization=org, user=user, role=role, actor=self.actor)
            if refusal is not None:
                raise ValidationError({"role": refusal.message})
        return data


@admin.register(Membership)
class MembershipAdmin(OrgScopedAdmin):
    """Members of the organisations the user administers: change a role, remove. Nobody is added here:
    existing accounts are invited (:class:`MembershipInvitationAdmin`). A membership's user and
    organisation never change."""

    list_display = ["user", "organization", "role", "created_at"]
    list_filter = ["role"]
    search_fields = ["user__username", "user__email"]

    def narrow_queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return without_service_users(queryset, path="user__")

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [*super().get_readonly_fields(request, obj), "user", "organization"]

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        kwargs.setdefault("form", MembershipAdminForm)
        form = super().get_form(request, obj, change=change, **kwargs)
        form.actor = request.user  # a class made for this request by modelform_factory
        return form

    def save_model(self, request: HttpRequest, obj: Membership, form: Any, change: bool) -> None:
        outcome = membership_save(
            organization=obj.organization,
            user=obj.user,
            role=obj.role,
            actor=signed_in_user(request),
            ip_address=client_ip(request),
        )
        if isinstance(outcome, MembershipRefused):  # the form checked it: only a concurrent change gets here
            raise PermissionDenied(outcome.message)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if not super().has_delete_permission(request, obj):
            return False
        return obj is None or _removal_refusal(obj, request.user) is None

    def delete_model(self, request: HttpRequest, obj: Membership) -> None:
        self._remove(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        for membership in queryset.select_related("user", "organization"):
            self._remove(request, membership)

    def _remove(self, request: HttpRequest, membership: Membership) -> None:
        outcome = membership_remove(
            membership=membership, actor=signed_in_user(request), ip_address=client_ip(request)
        )
        if isinstance(outcome, MembershipRefused):
            self.message_user(request, f"{membership}: {outcome.message}", messages.ERROR)


class MembershipInvitationForm(forms.ModelForm):
    """Refuses what :func:`~platform_core.identity.members.invitations.member_invitation_send` would
    refuse."""

    actor: Any = None

    class Meta:
        model = MembershipInvitation
        fields = ["organization", "user", "role"]

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        org, user, role = data.get("organization"), data.get("user"), data.get("role")
        if org is not None and user is not None and role:
            problem = member_invitation_problem(organization=org, user=user, role=role, actor=self.actor)
            if isinstance(problem, MemberNotAdded):
                raise ValidationError({"user": problem.message})
            if problem is not None:
                raise ValidationError({"role": problem.message})
        return data


@admin.register(MembershipInvitation)
class MembershipInvitationAdmin(OrgScopedAdmin):
    """Invitations of existing accounts into the organisations the user administers: add (invite) and
    delete (withdraw); the person accepts or declines on their *Invitations* page."""

    form = MembershipInvitationForm
    list_display = ["user", "organization", "role", "invited_by", "expires_at", "created_at"]
    list_filter = ["role"]
    search_fields = ["user__username", "user__email"]
    raw_id_fields = ["user"]  # superusers only; org admins get UserIdentifierField

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "user" and not request.user.is_superuser:
            return UserIdentifierField(label=db_field.verbose_name)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        initial = super().get_changeform_initial_data(request)  # a non-member's id is already dropped
        if "user" in initial and not request.user.is_superuser:
            visible = admin_visible_rows(request, get_user_model())
            username = username_prefill(value=initial.pop("user"), visible=visible)
            if username is not None:
                initial["user"] = username
        return initial

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        fields = list(super().get_readonly_fields(request, obj))
        if obj is None:
            return fields
        return [*fields, "organization", "user", "role", "invited_by", "expires_at"]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # invite again to change the role; withdraw to cancel

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        form.actor = request.user  # a class made for this request by modelform_factory
        return form

    def save_model(self, request: HttpRequest, obj: MembershipInvitation, form: Any, change: bool) -> None:
        if obj.organization_id is None:
            obj.organization = admin_orgs(request).first()
        outcome = member_invitation_send(
            organization=obj.organization,
            user=obj.user,
            role=obj.role,
            actor=signed_in_user(request),
            invitations_url=request.build_absolute_uri(reverse("invitations")),
            ip_address=client_ip(request),
        )
        if isinstance(outcome, MemberNotAdded | MembershipRefused):  # the form checked: a race gets here
            raise PermissionDenied(outcome.message)
        obj.pk = outcome.invitation.pk
        obj.created_at = outcome.invitation.created_at
        obj.expires_at = outcome.invitation.expires_at
        obj._state.adding = False

    def response_add(self, request: HttpRequest, obj: Any, post_url_continue: Any = None) -> HttpResponse:
        self.message_user(
            request,
            _("%(user)s was invited: they become a member when they accept.") % {"user": obj.user},
            messages.SUCCESS,
        )
        return HttpResponseRedirect(reverse("admin:platform_core_membershipinvitation_changelist"))

    def delete_model(self, request: HttpRequest, obj: MembershipInvitation) -> None:
        member_invitation_cancel(invitation=obj, actor=signed_in_user(request), ip_address=client_ip(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        for invitation in queryset.select_related("user", "organization"):
            member_invitation_cancel(
                invitation=invitation, actor=signed_in_user(request), ip_address=client_ip(request)
            )
