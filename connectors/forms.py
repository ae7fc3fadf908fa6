"""Admin forms of the connectors app.

Secrets get their own password inputs that are never pre-filled: leaving one blank keeps the stored
value, a new value replaces it, and the "clear" box removes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.html import conditional_escape
from django.utils.translation import gettext_lazy as _

from connectors import fields as connector_fields
from connectors.http.openapi import MAX_DOCUMENT_CHARS
from connectors.models import Connector, DatabaseEngine, McpTransport
from connectors.platform_kinds import kind_choice_error
from connectors.sql.dsn import dsn_password
from platform_core.secret_rules import validate_secret_length

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

# form field -> (model secret field, clear-box field)
SECRET_INPUTS = {"auth_secret_new": ("auth_secret", "auth_secret_clear"), "dsn_new": ("dsn", "dsn_clear")}


def validate_dsn_secret(value: str | None) -> None:
    """Refuse a DSN whose password is shorter than the minimum secret length (a DSN without one passes)."""
    if value:
        validate_secret_length(dsn_password(value))


def secret_form_input(
    label: StrOrPromise,
    *,
    strip: bool,
    validator: Callable[[Any], None] = validate_secret_length,
    help_text: StrOrPromise = "",
    **attrs: Any,
) -> forms.CharField:
    """A password input for a new secret, never pre-filled (connectors, Feishu channels): left blank, the
    stored value stays."""
    return forms.CharField(
        label=label,
        required=False,
        strip=strip,
        validators=[validator],
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password", **attrs}),
        help_text=help_text,
    )


class HostListField(forms.CharField):
    """A list of host names edited as one host per line (or comma-separated)."""

    widget = forms.Textarea(attrs={"rows": 3, "cols": 40})

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list):
            return "\n".join(value)
        return value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]  # text edited, a list cleaned
        if isinstance(value, list):
            return value
        text = super().to_python(value) or ""
        return [h.strip() for h in text.replace(",", "\n").splitlines() if h.strip()]


class ConnectorAdminForm(forms.ModelForm):
    auth_secret_new = secret_form_input(_("Secret"), strip=False)
    auth_secret_clear = forms.BooleanField(label=_("Remove the stored secret"), required=False)
    dsn_new = secret_form_input(_("Database DSN"), strip=False, validator=validate_dsn_secret, size=60)
    dsn_clear = forms.BooleanField(label=_("Remove the stored DSN"), required=False)
    allowed_private_hosts = HostListField(
        label=_("Allowed private hosts"),
        required=False,
        help_text=_(
            "One host name or IP address per line. Only for systems inside your network: these hosts may "
            "resolve to private or loopback addresses."
        ),
    )

    schema_allow_list = HostListField(
        label=_("Available schemas and tables"),
        required=False,
        help_text=_(
            "One schema ('sales') or table ('sales.orders') per line: the agent sees and queries only these. "
            "Leave empty for everything the account can read."
        ),
    )

    class Meta:
        model = Connector
        fields = ["organization", *connector_fields.EDITABLE]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A form posted without these (an HTTP connector, a script) keeps their defaults.
        for optional in ("engine", "schema_cache_seconds", "mcp_transport", "mcp_command"):
            if optional in self.fields:
                self.fields[optional].required = False
        for name, (secret, _clear) in SECRET_INPUTS.items():
            if name not in self.fields:
                continue
            if self.instance.has_secret(secret):
                self.fields[name].help_text = _(
                    "A value is stored. Leave blank to keep it, or type a new one."
                )
            else:
                self.fields[name].help_text = _("Nothing is stored yet.")
        if "auth_secret_new" in self.fields:
            self.fields["auth_secret_new"].help_text = "{} {}".format(
                self.fields["auth_secret_new"].help_text,
                _("API key, bearer token, password or OAuth2 client secret, by authentication type."),
            )
        # The admin prints help texts as HTML; ours are plain text ("'<connector>__<action>'" must show).
        for field in self.fields.values():
            field.help_text = conditional_escape(field.help_text)

    def clean_kind(self) -> str:
        kind = str(self.cleaned_data.get("kind") or "")
        error = kind_choice_error(None if self.instance._state.adding else self.instance.kind, kind)
        if error:
            raise forms.ValidationError(error)
        return kind

    def clean_engine(self) -> str:
        return self.cleaned_data.get("engine") or DatabaseEngine.POSTGRESQL

    def clean_mcp_transport(self) -> str:
        return self.cleaned_data.get("mcp_transport") or McpTransport.STREAMABLE_HTTP

    def clean_mcp_command(self) -> Any:
        value = self.cleaned_data.get("mcp_command")
        return [] if value in (None, "") else value

    def clean_schema_cache_seconds(self) -> int:
        value = self.cleaned_data.get("schema_cache_seconds")
        return Connector._meta.get_field("schema_cache_seconds").get_default() if value is None else value

    def clean(self) -> dict[str, Any]:
        super().clean()  # Django's ModelForm.clean returns cleaned_data, which django-stubs types as optional
        data = self.cleaned_data
        self.secret_changes: dict[str, str] = {}
        for name, (secret, clear) in SECRET_INPUTS.items():
            value = data.get(name) or ""
            if value and data.get(clear):
                self.add_error(clear, _("Either enter a new value or remove the stored one, not both."))
            elif value:
                self.secret_changes[secret] = value
            elif data.get(clear):
                self.secret_changes[secret] = ""
        # Model validation (which checks that a needed secret exists) runs after this on the instance.
        for secret, value in self.secret_changes.items():
            setattr(self.instance, secret, value)
        return data

    def _update_errors(self, errors: ValidationError) -> None:
        # The model names its secret fields; this form edits them through the *_new inputs.
        if hasattr(errors, "error_dict"):
            renamed = {"auth_secret": "auth_secret_new", "dsn": "dsn_new"}
            errors = ValidationError({renamed.get(k, k): v for k, v in errors.error_dict.items()})
        super()._update_errors(errors)  # type: ignore[misc]  # a private hook django-stubs leaves out


class ImportOpenAPIForm(forms.Form):
    """Upload or paste an OpenAPI 3 document."""

    file = forms.FileField(label=_("Upload a document"), required=False)
    text = forms.CharField(
        label=_("Or paste it here"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 18, "cols": 100, "spellcheck": "false"}),
        help_text=_("OpenAPI 3.0 or 3.1, as JSON or YAML."),
    )

    def clean(self) -> dict[str, Any]:
        super().clean()  # Django's Form.clean returns cleaned_data, which django-stubs types as optional
        data = self.cleaned_data
        upload, text = data.get("file"), (data.get("text") or "").strip()
        if upload and text:
            raise ValidationError(_("Upload a file or paste a document, not both."))
        if upload:
            if upload.size > MAX_DOCUMENT_CHARS:
                raise ValidationError(_("The file is too large."))
            try:
                text = upload.read().decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                raise ValidationError(_("The file is not UTF-8 text.")) from exc
        if not text:
            raise ValidationError(_("Upload a file or paste a document."))
        data["document"] = text
        return data
