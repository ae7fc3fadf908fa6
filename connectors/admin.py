"""Admin pages of the connectors app, all scoped to the organisations the user administers.

Connectors carry their actions inline, an "Import OpenAPI" page, a "Test connection" button and, for
database connectors, a "Refresh schema" button, for MCP connectors a "Sync tools" button (also run on
every save; all also list actions); secrets are write-only password inputs. The call log is read-only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.options import InlineModelAdmin
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import models
from django.db.models import Count, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_POST

from connectors import fields as connector_fields
from connectors.adapter_types import ConnectionUnconfirmed, ConnectionWorks
from connectors.forms import SECRET_INPUTS, ConnectorAdminForm, ImportOpenAPIForm
from connectors.http.openapi import OpenAPIError
from connectors.kinds import adapter_list
from connectors.mcp.client import McpFailure
from connectors.mcp.confirm import ConfirmRefused, mcp_action_confirm_read, mcp_action_withdraw_read
from connectors.mcp.lookalikes import Lookalike, lookalikes_for_connector
from connectors.mcp.sync import SyncReport, connector_sync_mcp_tools, mcp_sync_after_save
from connectors.mcp.trust import server_claim
from connectors.models import Connector, ConnectorAction, ConnectorCallLog, ConnectorKind, ensure_schema_tools
from connectors.services import (
    action_delete,
    action_save,
    connector_delete,
    connector_import_openapi,
    connector_save,
    connector_test_connection,
)
from connectors.sql.schema import schema_cache_clear
from platform_core.admin.base import HistoryAdmin, OrgScopedAdmin, OrgScopedInline
from platform_core.request_meta import client_ip, signed_in_user

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise


class _ActionInline(OrgScopedInline):
    """A connector's actions, with the columns of its kind (the kind's class names the fieldset
    ``for-<kind>``: the form's script hides the table while another kind is chosen)."""

    model = ConnectorAction
    fk_name = "connector"
    extra = 0
    show_change_link = True
    ordering = ["name"]
    formfield_overrides = {models.TextField: {"widget": forms.Textarea(attrs={"rows": 2, "cols": 40})}}


class HttpActionInline(_ActionInline):
    fields = ["name", "method", "path_template", "is_write", "is_write_override", "is_active", "source"]
    readonly_fields = ["source"]
    classes = ["for-http"]


class DatabaseActionInline(_ActionInline):
    fields = ["name", "sql_template", "free_form", "is_write", "is_write_override", "is_active", "source"]
    readonly_fields = ["source"]
    classes = ["for-database"]


class McpActionInline(_ActionInline):
    fields = ["name", "mcp_tool", "mcp_read_status", "is_write", "is_write_override", "is_active", "source"]
    readonly_fields = ["mcp_tool", "mcp_read_status", "source"]
    classes = ["for-mcp"]

    @admin.display(description=_("read or write (MCP)"))
    def mcp_read_status(self, obj: ConnectorAction) -> str:
        return mcp_read_status(obj)


class KnowledgeActionInline(_ActionInline):
    """A knowledge base's one action, its search: on or off, nothing else to set."""

    fields = ["name", "is_active"]
    readonly_fields = ["name"]
    classes = ["for-knowledge"]
    max_num = 1
    can_delete = False


class SkillsActionInline(_ActionInline):
    """The skill library's one action, reading a skill: on or off, nothing else to set."""

    fields = ["name", "is_active"]
    readonly_fields = ["name"]
    classes = ["for-skills"]
    max_num = 1
    can_delete = False


class MemoryActionInline(_ActionInline):
    """The memory's one action, remembering: on or off, nothing else to set."""

    fields = ["name", "is_active"]
    readonly_fields = ["name"]
    classes = ["for-memory"]
    max_num = 1
    can_delete = False


ACTION_INLINES: dict[str, type[_ActionInline]] = {
    ConnectorKind.HTTP: HttpActionInline,
    ConnectorKind.DATABASE: DatabaseActionInline,
    ConnectorKind.MCP: McpActionInline,
    ConnectorKind.KNOWLEDGE: KnowledgeActionInline,
    ConnectorKind.SKILLS: SkillsActionInline,
    ConnectorKind.MEMORY: MemoryActionInline,
}


def _form_fields_by_kind() -> dict[str, list[str]]:
    """The admin form's inputs each kind uses (a secret has a new-value input and a clear box)."""
    inputs = {secret: [name, clear] for name, (secret, clear) in SECRET_INPUTS.items()}
    return {
        adapter.kind: [name for field in adapter.settings for name in inputs.get(field, [field])]
        for adapter in adapter_list()
    }


# The buttons of one kind of connector: the kind, and the answer for a connector of another kind.
_DATABASES_ONLY = (ConnectorKind.DATABASE.value, _("Only database connectors have a schema."))
_MCP_ONLY = (ConnectorKind.MCP.value, _("Only MCP connectors have tools to sync."))

_CLAIMS = {
    "read": _("the server claims it only reads"),
    "write": _("the server claims it writes"),
    "contradictory": _("the server marks it both read-only and destructive (a write)"),
}


def mcp_read_status(action: ConnectorAction) -> str:
    """An MCP tool's state for the admin: confirmed read, or unconfirmed write and the server's claim."""
    if not action.mcp_tool:
        return ""
    claim = str(_CLAIMS[server_claim(action.mcp_annotations).kind])
    if action.mcp_read_confirmed_at is not None and not action.is_write:
        return str(_("read, confirmed by an admin (%(claim)s)") % {"claim": claim})
    return str(_("write until an admin confirms it as a read (%(claim)s)") % {"claim": claim})


def lookalike_text(item: Lookalike) -> str:
    reasons = {
        "same name": _("the same name"),
        "similar name": _("a similar name"),
        "similar description": _("a similar description"),
    }
    return str(
        _("%(tool)s has %(reason)s as %(other_tool)s of the connector %(other)s.")
        % {
            "tool": item.tool,
            "reason": reasons[item.reason],
            "other_tool": item.other_tool,
            "other": item.other_connector,
        }
    )


@admin.register(Connector)
class ConnectorAdmin(OrgScopedAdmin):
    form = ConnectorAdminForm
    inlines = list(ACTION_INLINES.values())  # one of them per connector: get_inlines
    list_display = ["name", "organization", "kind", "base_url", "auth_type", "action_count", "is_active"]
    list_filter = ["kind", "is_active", "auth_type"]
    search_fields = ["name", "description"]
    actions = ["test_connection", "refresh_schema", "sync_tools"]
    change_form_template = "admin/connectors/connector/change_form.html"
    # Each section but the first is shown by connectors' script only while the chosen kind uses one of
    # its fields (each kind's settings: connectors.kinds); without the script every section shows.
    fieldsets = [
        (None, {"fields": ["organization", *connector_fields.IDENTITY, "is_active"]}),
        (_("Server"), {"fields": list(connector_fields.HTTP), "classes": ["connector-server"]}),
        (
            _("MCP server"),
            {
                "fields": list(connector_fields.MCP),
                "classes": ["connector-mcp"],
                "description": _(
                    "The base URL above is the server's MCP endpoint. Tools are synced as actions on every "
                    "save; every tool is a write until an admin confirms it as a read (Connector actions → "
                    "'Confirm as read'); the server's annotations are only its claim."
                ),
            },
        ),
        (
            _("Authentication"),
            {
                "fields": [*connector_fields.AUTHENTICATION, "auth_secret_new", "auth_secret_clear"],
                "classes": ["connector-authentication"],
                "description": _("Secrets are encrypted at rest and never shown again after saving."),
            },
        ),
        (
            _("SQL database"),
            {
                "fields": [
                    *connector_fields.DATABASE_ENGINE,
                    "dsn_new",
                    "dsn_clear",
                    *connector_fields.DATABASE_LIMITS,
                ],
                "classes": ["connector-database"],
            },
        ),
        (
            _("Limits and network"),
            {
                "fields": [*connector_fields.NETWORK_LIMITS, *connector_fields.PRIVATE_HOSTS],
                "classes": ["connector-limits"],
            },
        ),
    ]

    def get_inlines(
        self, request: HttpRequest, obj: Connector | None
    ) -> list[type[InlineModelAdmin[ConnectorAction, Connector]]]:
        """The actions table of the connector's kind (a new connector's: HTTP, whose actions are typed
        in; a database's schema tools and an MCP server's tools arrive when it is saved)."""
        return [ACTION_INLINES[obj.kind if obj is not None else ConnectorKind.HTTP]]

    def render_change_form(
        self, request: HttpRequest, context: dict[str, Any], *args: Any, **kwargs: Any
    ) -> Any:
        context["connector_fields_by_kind"] = _form_fields_by_kind()
        return super().render_change_form(request, context, *args, **kwargs)

    def narrow_queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return queryset.annotate(_action_count=Count("actions"))

    @admin.display(description=_("actions"), ordering="_action_count")
    def action_count(self, obj: Connector) -> int:
        return getattr(obj, "_action_count", 0)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None:
            fields.append("organization")  # secrets are bound to the organisation: it never changes
        return fields

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> HttpResponse:
        connector = self.get_object(request, unquote(object_id))  # scoped: another org's is None
        context = dict(extra_context or {})
        if connector is not None and connector.kind == ConnectorKind.MCP:
            context["mcp_lookalikes"] = [
                lookalike_text(x) for x in lookalikes_for_connector(connector=connector)
            ]
        return super().change_view(request, object_id, form_url, extra_context=context)

    def save_model(self, request: HttpRequest, obj: Connector, form: Any, change: bool) -> None:
        connector_save(
            connector=obj,
            actor=signed_in_user(request),
            secrets=getattr(form, "secret_changes", {}),
            ip_address=client_ip(request),
        )
        self._report_sync(
            request,
            obj,
            mcp_sync_after_save(connector=obj, actor=signed_in_user(request), ip_address=client_ip(request)),
        )

    def delete_model(self, request: HttpRequest, obj: Connector) -> None:
        connector_delete(connector=obj, actor=signed_in_user(request), ip_address=client_ip(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        for connector in queryset:
            connector_delete(
                connector=connector, actor=signed_in_user(request), ip_address=client_ip(request)
            )

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        if formset.model is not ConnectorAction:
            super().save_formset(request, form, formset, change)
            return
        actions = formset.save(commit=False)
        for action in formset.deleted_objects:
            action_delete(action=action, actor=signed_in_user(request), ip_address=client_ip(request))
        for action in actions:
            action_save(action=action, actor=signed_in_user(request), ip_address=client_ip(request))
        formset.save_m2m()

    # --- extra pages ----------------------------------------------------------------------------------
    def get_urls(self) -> list[Any]:
        info = self.model._meta.app_label, self.model._meta.model_name
        extra = [
            path(
                "<path:object_id>/import-openapi/",
                self.admin_site.admin_view(self.import_openapi_view),
                name="{}_{}_import_openapi".format(*info),
            ),
        ]
        # The change form's buttons: each posts to its page, which acts and goes back to the form.
        buttons = {
            "test-connection": self.test_connection_view,
            "sync-tools": self.sync_tools_view,
            "refresh-schema": self.refresh_schema_view,
        }
        extra += [
            path(
                f"<path:object_id>/{slug}/",
                self.admin_site.admin_view(require_POST(view)),
                name="{}_{}_{}".format(*info, slug.replace("-", "_")),
            )
            for slug, view in buttons.items()
        ]
        return extra + super().get_urls()

    def _connector_for_change(self, request: HttpRequest, object_id: str) -> Connector:
        connector = self.get_object(request, unquote(object_id))  # scoped: another org's is None
        if connector is None:
            raise Http404(_("No such connector."))
        if not self.has_change_permission(request, connector):
            raise PermissionDenied
        return connector

    def import_openapi_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        connector = self._connector_for_change(request, object_id)
        report = None
        if request.method == "POST":
            form = ImportOpenAPIForm(request.POST, request.FILES)
            if form.is_valid():
                try:
                    report = connector_import_openapi(
                        connector=connector,
                        document_text=form.cleaned_data["document"],
                        actor=signed_in_user(request),
                        ip_address=client_ip(request),
                    )
                except OpenAPIError as exc:
                    where = _(" (at %(location)s)") % {"location": exc.location} if exc.location else ""
                    form.add_error(None, f"{exc.message}{where}")
                except DjangoValidationError as exc:
                    form.add_error(None, exc)
                else:
                    self.message_user(request, _("The document was imported."), messages.SUCCESS)
        else:
            form = ImportOpenAPIForm()
        context = {
            **self.admin_site.each_context(request),
            "title": _("Import OpenAPI into %(name)s") % {"name": connector.name},
            "opts": self.model._meta,
            "original": connector,
            "form": form,
            "report": report,
            "has_view_permission": True,
        }
        return TemplateResponse(request, "admin/connectors/connector/import_openapi.html", context)

    def test_connection_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return self._button_view(request, object_id, self._report_test)

    def refresh_schema_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return self._button_view(request, object_id, self._refresh, only=_DATABASES_ONLY)

    def sync_tools_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        return self._button_view(request, object_id, self._sync, only=_MCP_ONLY)

    def _button_view(
        self,
        request: HttpRequest,
        object_id: str,
        act: Callable[[HttpRequest, Connector], None],
        *,
        only: tuple[str, StrOrPromise] | None = None,
    ) -> HttpResponse:
        """A change form button: act on the connector, then go back to the form. ``only`` names the kind
        the button is for and the 404's message for a connector of another kind."""
        connector = self._connector_for_change(request, object_id)
        if only is not None and connector.kind != only[0]:
            raise Http404(only[1])
        act(request, connector)
        info = self.model._meta.app_label, self.model._meta.model_name
        return HttpResponseRedirect(reverse("admin:{}_{}_change".format(*info), args=[connector.pk]))

    @admin.action(description=_("Sync tools"))
    def sync_tools(self, request: HttpRequest, queryset: QuerySet[Connector]) -> None:
        for connector in queryset.filter(kind=ConnectorKind.MCP):
            self._sync(request, connector)

    def _sync(self, request: HttpRequest, connector: Connector) -> None:
        report = connector_sync_mcp_tools(
            connector=connector, actor=signed_in_user(request), ip_address=client_ip(request)
        )
        self._report_sync(request, connector, report)

    def _report_sync(self, request: HttpRequest, connector: Connector, report: Any) -> None:
        if report is None:
            return
        if isinstance(report, McpFailure):
            self.message_user(
                request,
                _("%(name)s: the tools could not be synced: %(error)s")
                % {"name": connector.name, "error": report.error},
                messages.WARNING,
            )
            return
        none = _("none")
        self.message_user(
            request,
            _("%(name)s: tools synced. Added: %(added)s. Changed: %(changed)s. Removed: %(removed)s.")
            % {
                "name": connector.name,
                "added": ", ".join(report.added) or none,
                "changed": ", ".join(report.changed) or none,
                "removed": ", ".join(report.removed) or none,
            },
            messages.SUCCESS,
        )
        self._report_sync_warnings(request, connector, report)

    def _report_sync_warnings(self, request: HttpRequest, connector: Connector, report: SyncReport) -> None:
        """Skipped tools, withdrawn confirmations and lookalikes of other connectors' tools (escaped)."""
        for tool, reason in report.skipped:
            self.message_user(
                request,
                _("%(name)s: the tool %(tool)s was skipped: %(reason)s")
                % {"name": connector.name, "tool": tool[:100], "reason": reason},
                messages.WARNING,
            )
        if report.unconfirmed:
            self.message_user(
                request,
                _(
                    "%(name)s: these tools changed their annotations, input schema or description and are "
                    "no longer confirmed as reads (they are writes until an admin confirms them again): "
                    "%(tools)s"
                )
                % {"name": connector.name, "tools": ", ".join(report.unconfirmed)},
                messages.WARNING,
            )
        for item in report.lookalikes:
            self.message_user(
                request,
                _("%(name)s: %(warning)s Check that agents cannot mistake one for the other.")
                % {"name": connector.name, "warning": lookalike_text(item)},
                messages.WARNING,
            )

    @admin.action(description=_("Test connection"))
    def test_connection(self, request: HttpRequest, queryset: QuerySet[Connector]) -> None:
        for connector in queryset:
            self._report_test(request, connector)

    @admin.action(description=_("Refresh schema"))
    def refresh_schema(self, request: HttpRequest, queryset: QuerySet[Connector]) -> None:
        for connector in queryset.filter(kind=ConnectorKind.DATABASE):
            self._refresh(request, connector)

    def _refresh(self, request: HttpRequest, connector: Connector) -> None:
        schema_cache_clear(str(connector.pk))
        ensure_schema_tools(connector)
        self.message_user(
            request,
            _("%(name)s: the tables and their descriptions will be read anew.") % {"name": connector.name},
            messages.SUCCESS,
        )

    def _report_test(self, request: HttpRequest, connector: Connector) -> None:
        result = connector_test_connection(connector=connector)
        if isinstance(result, ConnectionWorks):
            self.message_user(
                request,
                _("%(name)s: connection works (%(message)s, %(ms).0f ms).")
                % {"name": connector.name, "message": result.detail, "ms": result.latency_ms},
                messages.SUCCESS,
            )
        elif isinstance(result, ConnectionUnconfirmed):
            self.message_user(
                request,
                _(
                    "%(name)s: connection not confirmed: %(message)s (unless the API has nothing at its "
                    "base URL: then call one of its actions to check it)."
                )
                % {"name": connector.name, "message": result.reason},
                messages.WARNING,
            )
        else:
            self.message_user(
                request,
                _("%(name)s: connection failed: %(message)s")
                % {"name": connector.name, "message": result.reason},
                messages.ERROR,
            )


@admin.register(ConnectorAction)
class ConnectorActionAdmin(OrgScopedAdmin):
    list_display = ["name", "connector", "method", "path_template", "is_write", "source", "is_active"]
    list_filter = ["is_write", "is_active", "source", ("connector", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["name", "description", "path_template"]
    list_select_related = ["connector"]
    fields = [
        "connector",
        *connector_fields.ACTION_OPERATION,
        *connector_fields.ACTION_MCP_TOOL,
        "mcp_read_status",
        *connector_fields.ACTION_MCP_CONFIRMATION,
        *connector_fields.ACTION_WRITES,
        "is_active",
        *connector_fields.ACTION_ORIGIN,
    ]
    readonly_fields = [
        *connector_fields.ACTION_MCP_TOOL,
        "mcp_read_status",
        *connector_fields.ACTION_MCP_CONFIRMATION,
        *connector_fields.ACTION_ORIGIN,
    ]
    actions = ["confirm_read", "withdraw_read"]

    @admin.display(description=_("read or write (MCP)"))
    def mcp_read_status(self, obj: ConnectorAction) -> str:
        return mcp_read_status(obj)

    @admin.action(description=_("Confirm selected MCP tools as reads"))
    def confirm_read(self, request: HttpRequest, queryset: QuerySet[ConnectorAction]) -> None:
        self._decide(request, queryset, mcp_action_confirm_read, _("%(tool)s is now a confirmed read."))

    @admin.action(description=_("Withdraw the read confirmation of selected MCP tools"))
    def withdraw_read(self, request: HttpRequest, queryset: QuerySet[ConnectorAction]) -> None:
        self._decide(
            request, queryset, mcp_action_withdraw_read, _("%(tool)s is a write until confirmed again.")
        )

    def _decide(self, request: HttpRequest, queryset: QuerySet, service: Any, done: Any) -> None:
        for action in queryset.select_related("connector"):
            outcome = service(action=action, actor=signed_in_user(request), ip_address=client_ip(request))
            if isinstance(outcome, ConfirmRefused):
                self.message_user(
                    request,
                    _("%(tool)s cannot be confirmed as a read: %(reason)s.")
                    % {"tool": str(action), "reason": outcome.reason},
                    messages.ERROR,
                )
            elif outcome.changed:
                self.message_user(request, done % {"tool": str(action)}, messages.SUCCESS)

    def save_model(self, request: HttpRequest, obj: ConnectorAction, form: Any, change: bool) -> None:
        action_save(action=obj, actor=signed_in_user(request), ip_address=client_ip(request))

    def delete_model(self, request: HttpRequest, obj: ConnectorAction) -> None:
        action_delete(action=obj, actor=signed_in_user(request), ip_address=client_ip(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        for action in queryset.select_related("connector__organization"):
            action_delete(action=action, actor=signed_in_user(request), ip_address=client_ip(request))


@admin.register(ConnectorCallLog)
class ConnectorCallLogAdmin(HistoryAdmin):
    """Every connector call of agents, read-only; arguments are stored redacted."""

    list_display = [
        "created_at",
        "tool_name",
        "status",
        "is_write",
        "user",
        "http_status",
        "row_count",
        "latency_ms",
        "organization",
    ]
    list_filter = [
        "status",
        "is_write",
        ("connector", admin.RelatedOnlyFieldListFilter),
        ("created_at", admin.DateFieldListFilter),
    ]
    search_fields = ["tool_name", "run_id", "conversation_id", "tool_call_id"]
    date_hierarchy = "created_at"
    list_select_related = ["user", "organization"]
