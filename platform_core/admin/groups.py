"""The admin page of member groups (issue 34): an org admin names groups of their organisations' members,
changes them and deletes them. Every write goes through :mod:`platform_core.identity.groups.services`,
so the refusals (only the organisation's members; a name taken) and the audit rows are the API's."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from platform_core.admin.base import OrgScopedAdmin
from platform_core.identity.groups.services import (
    group_members_error,
    group_name_error,
    member_group_create,
    member_group_delete,
    member_group_update,
)
from platform_core.models import MemberGroup
from platform_core.request_meta import client_ip, signed_in_user


class MemberGroupForm(forms.ModelForm):
    """Refuses what the group services would refuse: a member of another organisation, someone who is no
    member at all."""

    class Meta:
        model = MemberGroup
        fields = ["organization", "name", "description", "members"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        organization = cleaned.get("organization") or (
            self.instance.organization if self.instance.organization_id else None
        )
        name = (cleaned.get("name") or "").strip()
        if organization is not None and name:
            problem = group_name_error(organization_id=organization.pk, name=name, group_id=self.instance.pk)
            if problem:
                self.add_error("name", problem)
        members = cleaned.get("members")
        if organization is not None and members:
            problem = group_members_error(organization_id=organization.pk, users=members)
            if problem:
                self.add_error("members", problem)
        return cleaned


@admin.register(MemberGroup)
class MemberGroupAdmin(OrgScopedAdmin):
    """Groups of the organisations the user administers; a group's organisation never changes."""

    form = MemberGroupForm
    list_display = ["name", "organization", "member_count", "created_at"]
    search_fields = ["name", "description"]
    filter_horizontal = ["members"]

    def narrow_queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return queryset.annotate(member_count=Count("members", distinct=True))

    @admin.display(description=_("members"), ordering="member_count")
    def member_count(self, obj: MemberGroup) -> int:
        return int(getattr(obj, "member_count", 0) or 0)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        fields = list(super().get_readonly_fields(request, obj))
        return fields if obj is None else [*fields, "organization"]

    def save_model(self, request: HttpRequest, obj: MemberGroup, form: Any, change: bool) -> None:
        data = form.cleaned_data
        actor, ip_address = signed_in_user(request), client_ip(request)
        if not change:
            created = member_group_create(
                organization=data["organization"],
                name=data["name"],
                description=data.get("description", ""),
                members=data.get("members") or (),
                actor=actor,
                ip_address=ip_address,
            )
            form.instance = created
            obj.pk = created.pk
            obj._state.adding = False
            return
        member_group_update(
            group=obj,
            actor=actor,
            name=data["name"],
            description=data.get("description", ""),
            members=data.get("members") or (),
            ip_address=ip_address,
        )

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        """Nothing more to save: the service saved the members with the group."""

    def delete_model(self, request: HttpRequest, obj: MemberGroup) -> None:
        member_group_delete(group=obj, actor=signed_in_user(request), ip_address=client_ip(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        for group in queryset:
            member_group_delete(group=group, actor=signed_in_user(request), ip_address=client_ip(request))
