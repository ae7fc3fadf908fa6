"""Admin pages of the tenancy core: organisations (with the read-only switch), the audit log and API keys
here, and the package's other pages imported below so that Django's autodiscovery, which imports this
module, registers them: linked identities (:mod:`.identities`), members and their invitations
(:mod:`.memberships`, naming users through :mod:`.members`), member groups (:mod:`.groups`) and single
sign-on's sign-in rules and settings (:mod:`.sso`). :mod:`.base` is the org-scoped ModelAdmin that every app's admin uses.
"""

from __future__ import annotations

from typing import Any
from weakref import WeakKeyDictionary

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from platform_core.admin.base import HistoryAdmin, OrgScopedAdmin
from platform_core.admin.groups import MemberGroupAdmin  # noqa: F401  (registers it; issue 34)
from platform_core.admin.identities import LinkedIdentityAdmin  # noqa: F401  (registers it; issue 20)
from platform_core.admin.memberships import MembershipAdmin  # noqa: F401  (registers it; issue 31)
from platform_core.audit.actions import audit_action_label
from platform_core.audit.export import audit_export_response, export_format
from platform_core.identity.api_keys.keys import api_key_create, api_key_revoke
from platform_core.models import (
    AUDIT_CHANGE_FIELDS,
    ApiKey,
    ApiKeyScope,
    AuditLog,
    Organization,
    site_time_zone,
)
from platform_core.request_meta import client_ip, signed_in_user
from platform_core.services import (
    organization_set_approval_cooldown,
    organization_set_attachment_retention,
    organization_set_memory_retention,
    organization_set_read_only,
    organization_set_time_zone,
)
from platform_core.tenancy.admin_orgs import admin_orgs

admin.site.site_header = _("Agent platform administration")
admin.site.site_title = _("Agent platform admin")
admin.site.index_title = _("Organisation administration")


class OrganizationForm(forms.ModelForm):
    class Meta:
        model = Organization
        fields = [
            "name",
            "slug",
            "read_only",
            "read_only_reason",
            "approval_config_cooldown_hours",
            "time_zone",
            "attachment_retention_days",
            "memory_retention_days",
        ]
        help_texts = {
            "read_only": _("While on, agents of this organisation cannot call any write action."),
            "read_only_reason": _("Required when read-only mode is on; agents and users see it."),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["approval_config_cooldown_hours"].required = False  # empty: 0, off
        self.fields["time_zone"].required = False  # empty: unchanged

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        if data.get("approval_config_cooldown_hours") is None:
            data["approval_config_cooldown_hours"] = 0
        if not data.get("time_zone"):
            data["time_zone"] = self.instance.time_zone if self.instance.pk else site_time_zone()
        if data.get("read_only") and not (data.get("read_only_reason") or "").strip():
            raise ValidationError({"read_only_reason": _("A reason is required to turn on read-only mode.")})
        return data


class ReadOnlyReasonForm(forms.Form):
    reason = forms.CharField(label=_("Reason"), max_length=500, widget=forms.TextInput(attrs={"size": 60}))


@admin.register(Organization)
class OrganizationAdmin(OrgScopedAdmin):
    form = OrganizationForm
    list_display = [
        "name",
        "slug",
        "read_only",
        "read_only_reason",
        "read_only_changed_by",
        "read_only_changed_at",
    ]
    list_filter = ["read_only"]
    search_fields = ["name", "slug"]
    actions = ["enable_read_only", "disable_read_only"]
    fieldsets = [
        (None, {"fields": ["name", "slug"]}),
        (
            _("Read-only mode"),
            {
                "fields": ["read_only", "read_only_reason", "read_only_changed_by", "read_only_changed_at"],
                "description": _(
                    "Switch the organisation to read-only: every write action of every agent is blocked "
                    "until it is switched off. Each change is recorded in the audit log."
                ),
            },
        ),
        (_("Separation of duties"), {"fields": ["approval_config_cooldown_hours"]}),
        (_("Time zone"), {"fields": ["time_zone"]}),
        (_("Chat attachments"), {"fields": ["attachment_retention_days"]}),
        (_("Memories"), {"fields": ["memory_retention_days"]}),
    ]
    readonly_fields = ["read_only_changed_by", "read_only_changed_at"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None and not request.user.is_superuser:
            fields.append("slug")
        return fields

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return request.user.is_superuser

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # audit rows protect organisations; deactivate instead of deleting

    def save_model(self, request: HttpRequest, obj: Organization, form: Any, change: bool) -> None:
        enabled = bool(form.cleaned_data.get("read_only"))
        reason = form.cleaned_data.get("read_only_reason") or ""
        cooldown = form.cleaned_data.get("approval_config_cooldown_hours") or 0
        zone = form.cleaned_data.get("time_zone") or obj.time_zone
        retention = form.cleaned_data.get("attachment_retention_days")
        memory_retention = form.cleaned_data.get("memory_retention_days")
        actor, ip_address = signed_in_user(request), client_ip(request)
        if change:  # the audited settings change through their services below, not with the form's save
            stored = Organization.objects.get(pk=obj.pk)
            obj.read_only, obj.read_only_reason = stored.read_only, stored.read_only_reason
            obj.approval_config_cooldown_hours = stored.approval_config_cooldown_hours
            obj.time_zone = stored.time_zone
            obj.attachment_retention_days = stored.attachment_retention_days
            obj.memory_retention_days = stored.memory_retention_days
        else:
            obj.read_only, obj.read_only_reason = False, ""
        super().save_model(request, obj, form, change)
        if change or cooldown:
            organization_set_approval_cooldown(
                organization=obj, actor=actor, hours=cooldown, ip_address=ip_address
            )
        if change:
            organization_set_time_zone(organization=obj, actor=actor, time_zone=zone, ip_address=ip_address)
            organization_set_attachment_retention(
                organization=obj, actor=actor, days=retention, ip_address=ip_address
            )
            organization_set_memory_retention(
                organization=obj, actor=actor, days=memory_retention, ip_address=ip_address
            )
        if change or enabled:
            organization_set_read_only(
                organization=obj, actor=actor, enabled=enabled, reason=reason, ip_address=ip_address
            )

    @admin.action(description=_("Turn on read-only mode"))
    def enable_read_only(self, request: HttpRequest, queryset: QuerySet[Organization]) -> HttpResponse | None:
        form = ReadOnlyReasonForm(request.POST if "apply" in request.POST else None)
        if form.is_bound and form.is_valid():
            for org in queryset:
                organization_set_read_only(
                    organization=org,
                    actor=signed_in_user(request),
                    enabled=True,
                    reason=form.cleaned_data["reason"],
                    ip_address=client_ip(request),
                )
            count = queryset.count()
            self.message_user(
                request,
                ngettext(
                    "Read-only mode is on for %(count)d organisation.",
                    "Read-only mode is on for %(count)d organisations.",
                    count,
                )
                % {"count": count},
                messages.SUCCESS,
            )
            return None
        context = {
            **self.admin_site.each_context(request),
            "title": _("Turn on read-only mode"),
            "organizations": queryset,
            "form": form,
            "opts": self.model._meta,
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/platform_core/read_only_reason.html", context)

    @admin.action(description=_("Turn off read-only mode"))
    def disable_read_only(self, request: HttpRequest, queryset: QuerySet[Organization]) -> None:
        for org in queryset:
            organization_set_read_only(
                organization=org, actor=signed_in_user(request), enabled=False, ip_address=client_ip(request)
            )
        count = queryset.count()
        self.message_user(
            request,
            ngettext(
                "Read-only mode is off for %(count)d organisation.",
                "Read-only mode is off for %(count)d organisations.",
                count,
            )
            % {"count": count},
            messages.SUCCESS,
        )


class AuditActionFilter(admin.SimpleListFilter):
    """The actions of the user's own audit rows, by their readable names."""

    title = _("action")
    parameter_name = "action"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        actions = model_admin.get_queryset(request).order_by("action").values_list("action", flat=True)
        return [(action, audit_action_label(action)) for action in actions.distinct()]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return queryset.filter(action=self.value()) if self.value() else queryset


@admin.register(AuditLog)
class AuditLogAdmin(HistoryAdmin):
    """The audit log is append-only: it can be read, filtered and exported (CSV, JSON Lines: the
    changelist's filters, search and date drill-down apply), never added to, changed or deleted."""

    list_display = ["created_at", "organization", "actor", "action_name", "target_repr", "ip_address"]
    list_filter = [AuditActionFilter, ("created_at", admin.DateFieldListFilter)]
    search_fields = ["action", "target_repr", "actor__username"]
    list_select_related = ["organization", "actor"]
    readonly_fields = [
        "organization",
        "actor",
        "action",
        "action_name",
        *AUDIT_CHANGE_FIELDS,
        "created_at",
    ]
    date_hierarchy = "created_at"
    change_list_template = "admin/platform_core/auditlog/change_list.html"

    @admin.display(description=_("action"), ordering="action")
    def action_name(self, obj: AuditLog) -> str:
        return audit_action_label(obj.action)

    def get_urls(self) -> list[Any]:
        view = self.admin_site.admin_view(self.export_view)
        return [
            path("export/<str:fmt>/", view, name="platform_core_auditlog_export"),
            *super().get_urls(),
        ]

    def export_view(self, request: HttpRequest, fmt: str) -> HttpResponseBase:
        """The changelist's rows (its filters, search and date drill-down) as a CSV or JSON Lines file."""
        chosen = export_format(fmt)
        if chosen is None:
            raise Http404(_("Unknown export format."))
        if not self.has_view_permission(request):
            raise PermissionDenied
        try:
            changelist = self.get_changelist_instance(request)
        except IncorrectLookupParameters:
            return HttpResponseRedirect(reverse("admin:platform_core_auditlog_changelist") + "?e=1")
        return audit_export_response(queryset=changelist.get_queryset(request), fmt=chosen, name="audit-log")


class ApiKeyAddForm(forms.ModelForm):
    """A new organisation key: its organisation, name, scopes and optional expiry."""

    scopes = forms.MultipleChoiceField(
        label=_("scopes"), choices=ApiKeyScope.choices, widget=forms.CheckboxSelectMultiple
    )

    class Meta:
        model = ApiKey
        fields = ["organization", "name", "scopes", "expires_at"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["organization"].required = True
        self.fields["name"].required = True


# The raw key created by an add request, for its response page; dropped with the request.
_RAW_KEY_OF_REQUEST: WeakKeyDictionary[HttpRequest, str] = WeakKeyDictionary()


@admin.register(ApiKey)
class ApiKeyAdmin(OrgScopedAdmin):
    """Organisation keys: org admins create (the key is shown once), review and revoke those of the
    organisations they administer; superusers see every key, personal ones too. Keys are never edited
    or deleted: a revoked key stays listed."""

    list_display = ["name", "key_prefix", "organization", "scope_list", "expires_at", "last_used_at", "state"]
    list_filter = ["organization", "revoked"]
    search_fields = ["name", "key_prefix"]
    actions = ["revoke_selected"]
    readonly_fields = [
        "name",
        "key_prefix",
        "organization",
        "user",
        "created_by",
        "scope_list",
        "created_at",
        "expires_at",
        "last_used_at",
        "last_used_ip",
        "revoked",
        "revoked_at",
        "revoked_by",
    ]

    @admin.display(description=_("scopes"))
    def scope_list(self, obj: ApiKey) -> str:
        labels = dict(ApiKeyScope.choices)
        return ", ".join(str(labels.get(s, s)) for s in obj.scopes)

    @admin.display(description=_("state"))
    def state(self, obj: ApiKey) -> str:
        if obj.revoked:
            return str(_("Revoked"))
        return str(_("Expired")) if obj.is_expired() else str(_("Active"))

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        if obj is None:
            kwargs["form"] = ApiKeyAddForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return ApiKeyAddForm.Meta.fields if obj is None else self.readonly_fields

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return [] if obj is None else self.readonly_fields

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        if change:
            return
        organization = form.cleaned_data["organization"]
        if not admin_orgs(request).filter(pk=organization.pk).exists() and not request.user.is_superuser:
            raise PermissionDenied
        created = api_key_create(
            name=form.cleaned_data["name"],
            scopes=form.cleaned_data["scopes"],
            expires_at=form.cleaned_data.get("expires_at"),
            organization=organization,
            actor=signed_in_user(request),
            ip_address=client_ip(request),
        )
        obj.__dict__.update({k: v for k, v in created.key.__dict__.items() if k != "_state"})
        obj._state.adding = False
        _RAW_KEY_OF_REQUEST[request] = created.raw

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        """Nothing to save beside the key (the service saved it)."""

    def response_add(self, request: HttpRequest, obj: Any, post_url_continue: Any = None) -> HttpResponse:
        """The new key, shown once on this page (never in a redirect, a message or a log)."""
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "key": obj,
            "raw": _RAW_KEY_OF_REQUEST.get(request, ""),
            "title": _("API key created"),
            "changelist_url": reverse("admin:platform_core_apikey_changelist"),
        }
        response = TemplateResponse(request, "admin/platform_core/apikey/created.html", context)
        response["Cache-Control"] = "no-store"
        return response

    @admin.action(description=_("Revoke selected API keys"), permissions=["revoke"])
    def revoke_selected(self, request: HttpRequest, queryset: QuerySet) -> None:
        count = 0
        for key in queryset.filter(revoked=False):
            api_key_revoke(key=key, actor=signed_in_user(request), ip_address=client_ip(request))
            count += 1
        self.message_user(
            request,
            ngettext("%(count)d API key revoked.", "%(count)d API keys revoked.", count) % {"count": count},
            messages.SUCCESS,
        )

    def has_revoke_permission(self, request: HttpRequest) -> bool:
        return self._is_org_admin(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


# single sign-on (issue 20): sign-in rules and settings, the admin's password sign-in form
from platform_core.admin import sso  # noqa: E402, F401
