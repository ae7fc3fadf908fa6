"""Admin pages of the guard rails, scoped to the organisations the admin user administers.

Approval policies, Feishu channels (write-only secrets and a "send a test card" action), approval
requests (read-only history, and a "re-send" action that re-binds pending ones to their policy's current
channel and approvers), rate limits and per-agent hook settings. Every change writes an audit row
with the before and after state (secrets only as set or not set).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db.models import Exists, OuterRef, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext_lazy as _

from connectors.forms import secret_form_input
from hooks import fields as hook_fields
from hooks.approvers import Audience, person_name, policy_audience
from hooks.condition_schema import condition_schema_messages, covered_scopes
from hooks.delivery import channel_send_test_card
from hooks.feishu.errors import FeishuError
from hooks.models import (
    APPROVER_ROLE_CHOICES,
    AgentHookSettings,
    ApprovalPolicy,
    ApprovalRequest,
    FeishuChannel,
    RateLimit,
)
from hooks.selectors import DECIDER_ROLES
from hooks.services import approval_resend
from platform_core.admin.base import AuditedAdmin, HistoryAdmin
from platform_core.identity.api_keys.keys import without_service_users
from platform_core.models import LinkedIdentity, Role
from platform_core.request_meta import client_ip, signed_in_user
from platform_core.tenancy.admin_orgs import admin_orgs

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from django_stubs_ext import StrOrPromise

# --- Feishu channels ------------------------------------------------------------------------------


def _secret_input(label: StrOrPromise) -> forms.CharField:
    return secret_form_input(
        label,
        strip=True,
        help_text=_("Stored encrypted and never shown again. Leave empty to keep the current value."),
    )


class FeishuChannelForm(forms.ModelForm):
    app_secret_input = _secret_input(_("App secret"))
    verification_token_input = _secret_input(_("Verification token"))
    encrypt_key_input = _secret_input(_("Encrypt key"))
    clear_secrets = forms.BooleanField(label=_("Remove all stored secrets"), required=False)

    class Meta:
        model = FeishuChannel
        fields = ["organization", *hook_fields.FEISHU_APP, *hook_fields.FEISHU_DELIVERY]

    def save(self, commit: bool = True) -> FeishuChannel:
        instance = super().save(commit=False)
        for name in FeishuChannel.SECRET_FIELDS:
            if self.cleaned_data.get("clear_secrets"):
                setattr(instance, name, "")
            elif self.cleaned_data.get(f"{name}_input"):
                setattr(instance, name, self.cleaned_data[f"{name}_input"])
        if commit:
            instance.save()
        return instance


@admin.register(FeishuChannel)
class FeishuChannelAdmin(AuditedAdmin):
    form = FeishuChannelForm
    list_display = [
        "name",
        "organization",
        "app_id",
        "default_chat_id",
        "language",
        "is_active",
        "secrets_stored",
    ]
    list_filter = ["is_active", "language"]
    search_fields = ["name", "app_id"]
    actions = ["send_test_card"]
    # The callback URL box (with its copy button) sits above the fields; see render_change_form.
    change_form_template = "admin/hooks/feishuchannel/change_form.html"

    class Media:
        css = {"all": ["css/hooks-admin.css"]}
        js = ["js/copy-button.js"]

    @admin.display(boolean=True, description=_("secrets stored"))
    def secrets_stored(self, obj: FeishuChannel) -> bool:
        return all(obj.has_secret(name) for name in FeishuChannel.SECRET_FIELDS)

    def render_change_form(
        self, request: HttpRequest, context: dict[str, Any], add: bool = False, change: bool = False,
        form_url: str = "", obj: FeishuChannel | None = None,
    ) -> Any:  # fmt: skip
        # Only a saved channel has its id: an unsaved one's default uuid changes on every page load.
        saved = obj if obj is not None and not add and not obj._state.adding else None
        context["callback_url"] = request.build_absolute_uri(saved.callback_path) if saved is not None else ""
        return super().render_change_form(
            request, context, add=add, change=change, form_url=form_url, obj=obj
        )

    @admin.action(description=_("Send a test card to the default chat"))
    def send_test_card(self, request: HttpRequest, queryset: QuerySet[FeishuChannel]) -> None:
        for channel in queryset:
            try:
                channel_send_test_card(channel=channel)
            except FeishuError as exc:
                self.message_user(
                    request,
                    _("%(channel)s: the test card could not be sent: %(error)s")
                    % {"channel": channel, "error": exc},
                    messages.ERROR,
                )
            else:
                self.message_user(
                    request, _("%(channel)s: test card sent.") % {"channel": channel}, messages.SUCCESS
                )


# --- approval policies ----------------------------------------------------------------------------


class ApproverChoiceField(forms.ModelMultipleChoiceField):
    """Approvers by name: "Full Name (username)", and whether their Feishu account is linked."""

    def label_from_instance(self, obj: Any) -> str:
        label = person_label(obj)
        if getattr(obj, "has_feishu", False):
            return _("%(person)s · Feishu linked") % {"person": label}
        return label


def person_label(user: User) -> str:
    name = person_name(user)
    return name if name == user.get_username() else f"{name} ({user.get_username()})"


class ApprovalPolicyForm(forms.ModelForm):
    approver_roles = forms.MultipleChoiceField(
        label=_("approver roles"),
        required=False,
        choices=[(role.value, role.label) for role in Role if role.value in APPROVER_ROLE_CHOICES],
        widget=forms.CheckboxSelectMultiple,
        help_text=_(
            "Every member holding one of these roles may decide too. No approvers and no roles: every "
            "approver, admin and owner of the organisation."
        ),
    )
    approver_open_ids_text = forms.CharField(
        label=_("People without a platform account (Feishu open_id)"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_(
            "Only for people who have no platform account: one Feishu open_id (ou_…) per line. They can "
            "decide on the Feishu card only. Members are chosen above, by name."
        ),
    )

    class Meta:
        model = ApprovalPolicy
        fields = [
            "organization",
            *hook_fields.POLICY_COVERAGE,
            "approver_users",
            "approver_roles",
            "approver_open_ids_text",
            *hook_fields.POLICY_DELIVERY,
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["approver_open_ids_text"].initial = "\n".join(self.instance.approver_open_ids or [])
            self.fields["approver_roles"].initial = list(self.instance.approver_roles or [])

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data  # what ModelForm.clean returns (typed as maybe None for forms in general)
        org = data.get("organization") or (
            self.instance.organization if self.instance.organization_id else None
        )
        errors: dict[str, Any] = {}
        if org is not None:
            for name in ("actions", "connectors"):
                if any(item.organization_id != org.pk for item in data.get(name) or []):
                    errors[name] = _("Choose items of this organisation.")
            users = data.get("approver_users") or []
            allowed = set(
                without_service_users(
                    get_user_model().objects.filter(
                        memberships__organization=org, memberships__role__in=DECIDER_ROLES
                    )
                ).values_list("pk", flat=True)
            )
            if any(user.pk not in allowed for user in users):
                errors["approver_users"] = _(
                    "Platform approvers must be approvers, admins or owners of this organisation."
                )
        if not data.get("actions") and not data.get("connectors"):
            errors["actions"] = _("Choose the actions or connectors this policy covers.")
        if not errors and (data.get("condition") or "").strip():
            scopes = covered_scopes(
                actions=data.get("actions") or [],
                connectors=data.get("connectors") or [],
                writes_only=bool(data.get("writes_only")),
            )
            if problems := condition_schema_messages(data["condition"], scopes):
                errors["condition"] = problems
        if errors:
            raise ValidationError(errors)
        return data

    def _post_clean(self) -> None:
        text = self.cleaned_data.get("approver_open_ids_text", "") or ""
        self.instance.approver_open_ids = [line.strip() for line in text.splitlines() if line.strip()]
        self.instance.approver_roles = list(self.cleaned_data.get("approver_roles") or [])
        super()._post_clean()  # type: ignore[misc]  # Django's private ModelForm step, absent from django-stubs


@admin.register(ApprovalPolicy)
class ApprovalPolicyAdmin(AuditedAdmin):
    form = ApprovalPolicyForm
    list_display = ["name", "organization", "condition", "channel", "timeout_seconds", "is_active"]
    list_filter = ["is_active"]
    search_fields = ["name", "condition"]
    filter_horizontal = ["actions", "connectors", "approver_users"]
    readonly_fields = ["who_is_asked"]

    class Media:
        css = {"all": ["css/hooks-admin.css"]}

    @admin.display(description=_("Who will be asked"))
    def who_is_asked(self, obj: ApprovalPolicy | None) -> str:
        if obj is None or obj.pk is None:
            return format_html(
                '<div class="who-is-asked">{}</div>',
                _(
                    "The platform approvers listed above decide in the approvals inbox. Nobody listed: "
                    "every approver, admin and owner of the organisation. The names appear here once the "
                    "policy is saved."
                ),
            )
        return audience_html(policy_audience(policy=obj))

    def formfield_for_manytomany(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "approver_users":
            users = without_service_users(
                get_user_model().objects.filter(memberships__role__in=DECIDER_ROLES)
            )
            if not request.user.is_superuser:
                users = users.filter(memberships__organization__in=admin_orgs(request))
            linked = LinkedIdentity.objects.filter(user=OuterRef("pk")).exclude(open_id="")
            kwargs["queryset"] = (
                users.distinct()
                .annotate(has_feishu=Exists(linked))
                .order_by("first_name", "last_name", "username")
            )
            kwargs["form_class"] = ApproverChoiceField
            return admin.ModelAdmin.formfield_for_manytomany(self, db_field, request, **kwargs)
        return super().formfield_for_manytomany(db_field, request, **kwargs)


def audience_html(audience: Audience) -> str:
    """The policy form's "who will be asked" box."""
    intro: StrOrPromise
    if audience.listed and audience.roles:
        intro = _(
            "These approvers (listed, or holding the role %(roles)s) decide in the approvals inbox:"
        ) % {"roles": ", ".join(audience.roles)}
    elif audience.listed:
        intro = _("These platform approvers decide in the approvals inbox:")
    else:
        intro = _(
            "Nobody is listed, so every approver, admin and owner of the organisation decides in the "
            "approvals inbox:"
        )
    people = format_html_join("", "<li>{}</li>", ((name,) for name in audience.users)) or format_html(
        "<li>{}</li>", _("nobody yet: add a member with the approver role")
    )
    if audience.card_problem:
        card = format_html('<p class="problem">{}</p>', audience.card_problem)
    elif audience.open_ids or audience.on_feishu:
        deciders = list(audience.on_feishu) + [
            str(_("%(open_id)s (no platform account)") % {"open_id": open_id})
            for open_id in audience.open_ids
        ]
        card = format_html(
            "<p>{}</p>",
            _("The Feishu card goes to chat %(chat)s; these people can decide on it: %(people)s.")
            % {"chat": audience.card_to, "people": ", ".join(deciders)},
        )
    else:
        card = format_html(
            "<p>{}</p>",
            _(
                "The Feishu card goes to chat %(chat)s without buttons (no approver has a linked Feishu "
                "account and no open_id is listed): it says to decide in the approvals inbox."
            )
            % {"chat": audience.card_to},
        )
    return format_html('<div class="who-is-asked"><p>{}</p><ul>{}</ul>{}</div>', intro, people, card)


# --- approval requests (history) ---------------------------------------------------------------------


@admin.register(ApprovalRequest)
class ApprovalRequestAdmin(HistoryAdmin):
    list_display = [
        "created_at",
        "organization",
        "tool_name",
        "status",
        "requested_by",
        "decider",
        "decided_via",
        "card_status",
    ]
    list_filter = ["status", "decided_via", "card_status"]
    search_fields = ["tool_name", "policy_name", "agent_name", "decided_by_open_id"]
    date_hierarchy = "created_at"
    list_select_related = ["requested_by", "decided_by", "organization"]
    actions = ["resend"]

    @admin.action(description=_("Re-send to the policy's current channel and approvers"))
    def resend(self, request: HttpRequest, queryset: QuerySet[ApprovalRequest]) -> None:
        actor = signed_in_user(request)
        for approval in queryset:
            outcome = approval_resend(approval=approval, actor=actor, ip_address=client_ip(request))
            if outcome.resent:
                self.message_user(
                    request, _("%(approval)s: re-sent.") % {"approval": approval}, messages.SUCCESS
                )
            else:
                self.message_user(
                    request,
                    _("%(approval)s: not re-sent, it is no longer pending.") % {"approval": approval},
                    messages.WARNING,
                )

    @admin.display(description=_("decided by"))
    def decider(self, obj: ApprovalRequest) -> str:
        return obj.decider_label()


# --- rate limits and per-agent settings ------------------------------------------------------------


@admin.register(RateLimit)
class RateLimitAdmin(AuditedAdmin):
    list_display = [
        "name",
        "organization",
        "connector",
        "per_user",
        "max_calls",
        "period_seconds",
        "is_active",
    ]
    list_filter = ["is_active", "per_user"]
    search_fields = ["name"]
    fields = ["organization", *hook_fields.RATE_LIMIT]
    autocomplete_fields = ["connector"]


@admin.register(AgentHookSettings)
class AgentHookSettingsAdmin(AuditedAdmin):
    list_display = ["agent", "organization", *hook_fields.AGENT_HOOK_SWITCHES]
    fields = ["organization", "agent", *hook_fields.AGENT_HOOK_SWITCHES]
    list_select_related = ["agent", "organization"]
    autocomplete_fields = ["agent"]
