"""The admin page of linked identities: an org admin sees the identities of their organisations' members
(sign-in links, and links made by hand in those organisations only) and links a member's Feishu
``open_id`` by hand for a member who never signs in with Feishu. Every hand-made link and unlink is
audited (:mod:`platform_core.identity.linked_identities`)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from platform_core.admin.base import OrgScopedAdmin
from platform_core.identity.linked_identities import (
    FEISHU,
    IdentityLinked,
    IdentityNotMember,
    identity_link_feishu_by_hand,
    identity_unlink_by_hand,
)
from platform_core.models import LinkedIdentity, Membership
from platform_core.request_meta import client_ip, signed_in_user
from platform_core.tenancy.admin_orgs import admin_orgs


class LinkFeishuForm(forms.ModelForm):
    class Meta:
        model = LinkedIdentity
        fields = ["organization", "user", "open_id"]
        labels = {"organization": _("organisation")}
        help_texts = {
            "open_id": _("The member's Feishu open_id (ou_…), for a member who never signs in with Feishu."),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in ("organization", "open_id"):
            if name in self.fields:
                self.fields[name].required = True

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        org, user, open_id = data.get("organization"), data.get("user"), (data.get("open_id") or "").strip()
        if org is not None and user is not None:
            if not Membership.objects.filter(organization=org, user=user).exists():
                self.add_error("user", _("Choose a member of this organisation."))
        if open_id and LinkedIdentity.objects.filter(provider=FEISHU, subject=open_id).exists():
            self.add_error("open_id", _("This Feishu open_id already belongs to a user."))
        return data


@admin.register(LinkedIdentity)
class LinkedIdentityAdmin(OrgScopedAdmin):
    form = LinkFeishuForm
    list_display = ["user", "provider", "open_id", "linked_how", "created_at", "last_seen_at"]
    list_filter = ["provider"]
    search_fields = ["user__username", "user__email", "open_id", "union_id"]
    list_select_related = ["user"]

    def scope(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if request.user.is_superuser:
            return queryset
        orgs = admin_orgs(request)
        members = Membership.objects.filter(organization__in=orgs).values("user_id")
        return queryset.filter(user_id__in=members).filter(
            Q(organization__isnull=True) | Q(organization__in=orgs)
        )

    @admin.display(description=_("linked"))
    def linked_how(self, obj: LinkedIdentity) -> str:
        if obj.organization_id is None:
            return str(_("by signing in"))
        return str(_("by hand in %(org)s") % {"org": obj.organization})

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return []
        return [f.name for f in self.model._meta.fields]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if not super().has_delete_permission(request, obj):
            return False
        if obj is None or request.user.is_superuser:
            return True
        return obj.organization_id is not None and admin_orgs(request).filter(pk=obj.organization_id).exists()

    def save_model(self, request: HttpRequest, obj: LinkedIdentity, form: Any, change: bool) -> None:
        assert obj.organization is not None  # the form requires one
        outcome = identity_link_feishu_by_hand(
            organization=obj.organization,
            actor=signed_in_user(request),
            user=obj.user,
            open_id=obj.open_id,
            ip_address=client_ip(request),
        )
        if isinstance(outcome, IdentityNotMember) or not isinstance(outcome, IdentityLinked):
            raise forms.ValidationError(_("The link could not be made."))
        saved = outcome.identity
        obj.pk, obj.subject, obj.provider, obj.created_at = (
            saved.pk,
            saved.subject,
            saved.provider,
            saved.created_at,
        )
        obj._state.adding = False

    def delete_model(self, request: HttpRequest, obj: LinkedIdentity) -> None:
        if obj.organization is None:  # made by signing in, not by an organisation's admin: it stays
            return
        identity_unlink_by_hand(
            organization=obj.organization,
            actor=signed_in_user(request),
            identity=obj,
            ip_address=client_ip(request),
        )

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        for obj in queryset.filter(organization__isnull=False).select_related("organization", "user"):
            if request.user.is_superuser or admin_orgs(request).filter(pk=obj.organization_id).exists():
                self.delete_model(request, obj)
