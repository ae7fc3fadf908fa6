"""Admin pages of the agents app, scoped to the organisations the admin user administers."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest
from django.utils.text import capfirst
from django.utils.translation import gettext_lazy as _

from agents.example_questions import ExampleQuestionsFormField
from agents.models import Agent, Conversation, ModelConfig, Run
from platform_core.admin_base import AuditedAdmin, OrgScopedAdmin
from platform_core.secret_rules import validate_secret_length


class ModelConfigForm(forms.ModelForm):
    api_key_input = forms.CharField(
        label=_("API key"),
        required=False,
        validators=[validate_secret_length],
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text=_("Stored encrypted and never shown again. Leave empty to keep the current key."),
    )
    clear_api_key = forms.BooleanField(label=_("Remove the stored API key"), required=False)

    class Meta:
        model = ModelConfig
        fields = [
            "organization",
            "name",
            "role",
            "base_url",
            "model",
            "tool_call",
            "json_mode",
            "context_window",
            "timeout",
            "is_default",
            "active",
        ]

    def save(self, commit: bool = True) -> ModelConfig:
        instance = super().save(commit=False)
        if self.cleaned_data.get("clear_api_key"):
            instance.api_key = ""
        elif self.cleaned_data.get("api_key_input"):
            instance.api_key = self.cleaned_data["api_key_input"]
        if commit:
            instance.save()
        return instance


@admin.register(ModelConfig)
class ModelConfigAdmin(AuditedAdmin):
    form = ModelConfigForm
    list_display = ["name", "organization", "model", "base_url", "role", "is_default", "active", "key_stored"]
    list_filter = ["role", "is_default", "active"]
    search_fields = ["name", "model", "base_url"]

    @admin.display(boolean=True, description=_("API key stored"))
    def key_stored(self, obj: ModelConfig) -> bool:
        return bool(obj.__dict__.get("api_key"))


@admin.register(Agent)
class AgentAdmin(AuditedAdmin):
    list_display = ["name", "organization", "model_config", "execution_mode", "active"]
    list_filter = ["execution_mode", "active"]
    search_fields = ["name", "description"]
    filter_horizontal = ["connectors"]
    fields = [
        "organization",
        "name",
        "description",
        "instructions",
        "model_config",
        "connectors",
        "execution_mode",
        "max_iterations",
        "completion_check",
        "example_questions",
        "active",
    ]

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
