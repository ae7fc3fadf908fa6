"""Admin pages of the agents app, scoped to the organisations the admin user administers."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponseRedirect
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.text import capfirst
from django.utils.translation import gettext_lazy as _

from agents.endpoint_check_labels import check_summary
from agents.endpoint_check_services import model_config_apply_check, model_config_check
from agents.endpoint_headers import headers_dump, headers_parse
from agents.example_questions import ExampleQuestionsFormField
from agents.knowledge import admin as knowledge_admin  # noqa: F401 - registers the knowledge bases' admin
from agents.knowledge.selectors import attachable_connectors
from agents.memory.connector import agent_memory_ready
from agents.model_presets import ABILITY_KEYS, PRESETS, ProviderPreset, preset_for, presets_as_data
from agents.models import AGENT_SETTINGS, Agent, Conversation, ModelConfig, ModelProvider, ModelRole, Run
from agents.skills import admin as skills_admin  # noqa: F401 - registers the skills' admin
from agents.usage import admin as usage_admin  # noqa: F401 - registers the budgets' admin
from agents.usage_dashboard import admin as usage_dashboard_admin  # noqa: F401 - links the dashboard
from platform_core.admin.base import AuditedAdmin, OrgScopedAdmin
from platform_core.request_meta import client_ip, signed_in_user
from platform_core.secret_rules import validate_secret_length

# The endpoint's prices per million tokens (empty: the cost of its calls is unknown).
PRICE_FIELDS = ("price_input", "price_cached_input", "price_output", "price_currency")


def _family_choices(preset: ProviderPreset) -> list[tuple[str, str]]:
    """The preset's model families as the form offers them: its chat families (``provider:key``), then its
    embedding and rerank families (``provider:embedding/key``, ``provider:rerank/key``), named so."""
    return (
        [(f"{preset.provider}:{f.key}", str(f.label)) for f in preset.families]
        + [
            (f"{preset.provider}:embedding/{f.key}", _("%(family)s (embedding)") % {"family": f.label})
            for f in preset.embedding_families
        ]
        + [
            (f"{preset.provider}:rerank/{f.key}", _("%(family)s (reranking)") % {"family": f.label})
            for f in preset.rerank_families
        ]
    )


def _family_of(config: ModelConfig) -> str:
    """The form's family choice for the preset family whose model ``config`` uses (in its role), or ``""``."""
    preset = preset_for(config.provider)
    if preset is None:
        return ""
    if config.role == ModelRole.EMBEDDING:
        embedding = next((f for f in preset.embedding_families if f.model == config.model), None)
        return f"{config.provider}:embedding/{embedding.key}" if embedding else ""
    if config.role == ModelRole.RERANK:
        rerank = next((f for f in preset.rerank_families if f.model == config.model), None)
        return f"{config.provider}:rerank/{rerank.key}" if rerank else ""
    family = next((f for f in preset.families if f.model == config.model), None)
    return f"{config.provider}:{family.key}" if family else ""


class ModelConfigForm(forms.ModelForm):
    api_key_input = forms.CharField(
        label=_("API key"),
        required=False,
        validators=[validate_secret_length],
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text=_("Stored encrypted and never shown again. Leave empty to keep the current key."),
    )
    clear_api_key = forms.BooleanField(label=_("Remove the stored API key"), required=False)
    model_family = forms.ChoiceField(
        label=_("Model family"),
        required=False,
        help_text=_(
            "Fills the model name, the context window, the output limit and the abilities; an embedding or "
            "rerank family also sets the role."
        ),
    )
    extra_headers_input = forms.CharField(
        label=_("Extra headers"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "class": "vLargeTextField", "spellcheck": "false"}),
        help_text=_(
            "A JSON object of header name to value, sent with every request (e.g. a gateway's "
            '{"X-Gateway-Key": "..."}). Stored encrypted; the values are never shown again. Leave empty to '
            "keep the stored headers."
        ),
    )
    clear_extra_headers = forms.BooleanField(label=_("Remove the stored extra headers"), required=False)

    class Meta:
        model = ModelConfig
        fields = [
            "organization",
            "name",
            "role",
            "provider",
            "base_url",
            "model",
            "api_version",
            *ABILITY_KEYS,
            "context_window",
            "max_output_tokens",
            "timeout",
            *PRICE_FIELDS,
            "fallback",
            "is_default",
            "active",
        ]
        # Django admin's wider number field: a context window of 1,000,000 tokens fits.
        widgets = {
            "context_window": forms.NumberInput(attrs={"class": "vBigIntegerField"}),
            "max_output_tokens": forms.NumberInput(attrs={"class": "vBigIntegerField"}),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["provider"].required = False  # a form posted without it keeps today's "custom"
        family = self.fields["model_family"]
        assert isinstance(family, forms.ChoiceField)  # the form's own field, declared above
        family.choices = [("", "---------")] + [
            (str(preset.label), _family_choices(preset)) for preset in PRESETS
        ]
        # The family is no stored field: a saved endpoint shows the family whose model it uses.
        family.initial = _family_of(self.instance) if self.instance.pk else ""
        names = self.instance.header_names if self.instance.pk else []
        if names:
            self.fields["extra_headers_input"].help_text = format_html(
                "{}<br>{} {}",
                self.fields["extra_headers_input"].help_text,
                _("Stored headers:"),
                ", ".join(names),
            )

    def clean_provider(self) -> str:
        return self.cleaned_data.get("provider") or ModelProvider.CUSTOM

    def clean_extra_headers_input(self) -> str:
        raw = self.cleaned_data.get("extra_headers_input") or ""
        return headers_dump(headers_parse(raw)) if raw.strip() else ""

    def save(self, commit: bool = True) -> ModelConfig:
        instance = super().save(commit=False)
        if self.cleaned_data.get("clear_api_key"):
            instance.api_key = ""
        elif self.cleaned_data.get("api_key_input"):
            instance.api_key = self.cleaned_data["api_key_input"]
        if self.cleaned_data.get("clear_extra_headers"):
            instance.extra_headers = ""
        elif self.cleaned_data.get("extra_headers_input"):
            instance.extra_headers = self.cleaned_data["extra_headers_input"]
        if commit:
            instance.save()
        return instance


@admin.register(ModelConfig)
class ModelConfigAdmin(AuditedAdmin):
    """Model endpoints: a provider's preset fills the form (static/agents/model-presets.js), and the change
    page runs "Check endpoint" and applies the abilities it found."""

    form = ModelConfigForm
    change_form_template = "admin/agents/modelconfig/change_form.html"
    list_display = [
        "name",
        "organization",
        "provider",
        "model",
        "base_url",
        "role",
        "is_default",
        "active",
        "key_stored",
        "last_checked_at",
    ]
    list_filter = ["provider", "role", "is_default", "active"]
    search_fields = ["name", "model", "base_url"]
    fieldsets = [
        (None, {"fields": ["organization", "name", "role", "is_default", "active"]}),
        (
            _("Endpoint"),
            {
                "fields": [
                    "provider",
                    "model_family",
                    "base_url",
                    "model",
                    "api_key_input",
                    "clear_api_key",
                    "api_version",
                    "extra_headers_input",
                    "clear_extra_headers",
                ]
            },
        ),
        (
            _("Abilities"),
            {"fields": list(ABILITY_KEYS)},
        ),
        (_("Limits"), {"fields": ["context_window", "max_output_tokens", "timeout"]}),
        (_("Fallback"), {"fields": ["fallback"]}),
        (_("Prices"), {"fields": list(PRICE_FIELDS)}),
    ]

    class Media:
        css = {"all": ["agents/model-presets.css"]}
        js = ["agents/model-presets.js"]

    @admin.display(boolean=True, description=_("API key stored"))
    def key_stored(self, obj: ModelConfig) -> bool:
        return bool(obj.__dict__.get("api_key"))

    def get_urls(self) -> list[Any]:
        view = self.admin_site.admin_view
        return [
            path("<path:object_id>/check/", view(self.check_view), name="agents_modelconfig_check"),
            path(
                "<path:object_id>/apply-check/",
                view(self.apply_check_view),
                name="agents_modelconfig_apply_check",
            ),
            *super().get_urls(),
        ]

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: ModelConfig | None = None,
    ) -> Any:
        context["model_presets"] = presets_as_data()
        context["endpoint_check"] = check_summary(obj) if obj is not None else None
        context["endpoint_checkable"] = obj is not None and self.has_change_permission(request, obj)
        return super().render_change_form(
            request, context, add=add, change=change, form_url=form_url, obj=obj
        )

    def _endpoint(self, request: HttpRequest, object_id: str) -> ModelConfig:
        if request.method != "POST":
            raise PermissionDenied
        obj = self.get_object(request, object_id)
        if obj is None:
            raise Http404
        if not self.has_change_permission(request, obj):
            raise PermissionDenied
        return obj

    def _back(self, obj: ModelConfig) -> HttpResponseRedirect:
        return HttpResponseRedirect(reverse("admin:agents_modelconfig_change", args=[obj.pk]))

    def check_view(self, request: HttpRequest, object_id: str) -> HttpResponseRedirect:
        """POST: run "Check endpoint" and store its report (the page shows it)."""
        obj = self._endpoint(request, object_id)
        report = model_config_check(config=obj, actor=signed_in_user(request), ip_address=client_ip(request))
        if report.refused_by_guard:
            self.message_user(request, report.refused_by_guard, messages.ERROR)
        elif report.outcome("models").status == "refused" and report.key_verified is None:
            self.message_user(
                request, _("The endpoint cannot be reached: nothing could be checked."), messages.ERROR
            )
        else:
            self.message_user(request, _("The endpoint was checked."), messages.SUCCESS)
        # The page opens at the report, next to the button that ran the check.
        return HttpResponseRedirect(self._back(obj).url + "#endpoint-check")

    def apply_check_view(self, request: HttpRequest, object_id: str) -> HttpResponseRedirect:
        """POST: set the abilities to those the last check found."""
        obj = self._endpoint(request, object_id)
        if not obj.last_check:
            self.message_user(request, _("Check the endpoint first."), messages.WARNING)
            return self._back(obj)
        changed = model_config_apply_check(
            config=obj, actor=signed_in_user(request), ip_address=client_ip(request)
        )
        if changed:
            self.message_user(request, _("The abilities found were applied."), messages.SUCCESS)
        else:
            self.message_user(request, _("The abilities already match the check."), messages.INFO)
        return self._back(obj)


class AgentAdminForm(forms.ModelForm):
    """An agent; the skills it is allowed are its organisation's."""

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        organization = cleaned.get("organization") or (
            self.instance.organization if self.instance.organization_id else None
        )
        skills = cleaned.get("skills") or []
        if organization is not None and any(s.organization_id != organization.pk for s in skills):
            self.add_error("skills", _("Choose skills of the agent's organisation."))
        return cleaned


@admin.register(Agent)
class AgentAdmin(AuditedAdmin):
    form = AgentAdminForm
    list_display = ["name", "organization", "model_config", "execution_mode", "active", "exposed_over_mcp"]
    list_filter = ["execution_mode", "active", "exposed_over_mcp"]
    search_fields = ["name", "description"]
    filter_horizontal = ["connectors", "skills"]
    fields = ["organization", *AGENT_SETTINGS]

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        agent_memory_ready(obj, actor=request.user)  # type: ignore[arg-type]

    def formfield_for_manytomany(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        field = super().formfield_for_manytomany(db_field, request, **kwargs)
        if db_field.name == "connectors" and field is not None:
            field.queryset = attachable_connectors(field.queryset)
        return field

    def formfield_for_dbfield(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "example_questions":
            return ExampleQuestionsFormField(
                required=False, label=capfirst(db_field.verbose_name), help_text=db_field.help_text
            )
        return super().formfield_for_dbfield(db_field, request, **kwargs)


class _ReadOnlyAdmin(OrgScopedAdmin):
    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Conversation)
class ConversationAdmin(_ReadOnlyAdmin):
    list_display = ["title", "organization", "user", "agent", "updated_at"]
    list_filter = ["agent"]
    search_fields = ["title", "user__username"]
    date_hierarchy = "updated_at"


@admin.register(Run)
class RunAdmin(_ReadOnlyAdmin):
    list_display = [
        "id",
        "organization",
        "conversation",
        "user",
        "status",
        "iterations",
        "elapsed",
        "started_at",
    ]
    list_filter = ["status"]
    date_hierarchy = "started_at"

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
