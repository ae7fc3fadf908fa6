"""``/api/v1/orgs/<slug>/connectors/``, their actions and the call log.

Members read connectors and actions (never a secret); owners and admins change them. The call log
shows admins every call of the organisation and other members their own calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from connectors.api.serializers import (
    ConnectorActionSerializer,
    ConnectorCallLogSerializer,
    ConnectorSerializer,
    ImportOpenAPISerializer,
    ImportReportSerializer,
)
from connectors.http.openapi import OpenAPIError
from connectors.mcp.client import McpFailure
from connectors.mcp.confirm import (
    ConfirmRefused,
    ReadConfirmed,
    ReadWithdrawn,
    mcp_action_confirm_read,
    mcp_action_withdraw_read,
)
from connectors.mcp.sync import SyncReport, connector_sync_mcp_tools, mcp_sync_after_save
from connectors.models import Connector, ConnectorAction, ConnectorCallLog, ConnectorKind
from connectors.selectors import (
    action_list_for_connector,
    call_log_list_for_org,
    connector_get_for_org,
    connector_list_for_org,
)
from connectors.services import (
    action_delete,
    action_save,
    connector_create_mcp,
    connector_create_with_openapi,
    connector_delete,
    connector_import_openapi,
    connector_save,
)
from platform_core.request_meta import client_ip
from platform_core.tenancy.scoping import IsOrgAdmin, IsOrgAdminOrReadOnly, IsOrgMember, OrgScopedViewMixin

_ADMIN_WRITES = [permissions.IsAuthenticated, IsOrgMember, IsOrgAdminOrReadOnly]
_ADMINS_ONLY = [permissions.IsAuthenticated, IsOrgMember, IsOrgAdmin]
_SECRETS = ("auth_secret", "dsn")


def _model_errors(exc: DjangoValidationError) -> ValidationError:
    if hasattr(exc, "error_dict"):
        detail = {("non_field_errors" if k == "__all__" else k): v for k, v in exc.message_dict.items()}
        return ValidationError(detail)
    return ValidationError({"non_field_errors": exc.messages})


def _settings_and_secrets(serializer: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The serializer's validated data apart from the secrets given, and those secrets."""
    data = dict(serializer.validated_data)
    secrets = {k: data.pop(k) for k in _SECRETS if k in data}
    return data, secrets


def _openapi_error(exc: OpenAPIError, field: str) -> ValidationError:
    return ValidationError({field: [exc.message], "location": exc.location})


class ConnectorViewSet(OrgScopedViewMixin, viewsets.ModelViewSet):
    """The organisation's connectors. POST may carry an ``openapi`` document to import as actions."""

    serializer_class = ConnectorSerializer
    queryset = Connector.objects.all()
    permission_classes = _ADMIN_WRITES

    def get_base_queryset(self) -> QuerySet:
        if not hasattr(self, "org"):
            return Connector.objects.none()
        return connector_list_for_org(organization=self.org)

    def perform_create(self, serializer: Any) -> None:
        data, secrets = _settings_and_secrets(serializer)
        document = data.pop("openapi", None)
        connector = Connector(organization=self.org, **data)
        try:
            if document is not None:
                connector, report = connector_create_with_openapi(
                    connector=connector,
                    actor=self.request.user,
                    secrets=secrets,
                    document_text=document,
                    ip_address=client_ip(self.request),
                )
                self.import_report = report.as_dict()
            elif connector.kind == ConnectorKind.MCP:
                connector, synced = connector_create_mcp(
                    connector=connector,
                    actor=self.request.user,
                    secrets=secrets,
                    ip_address=client_ip(self.request),
                )
                self._report_tool_sync(synced)
            else:
                self._save(connector, secrets)
        except DjangoValidationError as exc:
            raise _model_errors(exc) from exc
        except OpenAPIError as exc:
            raise _openapi_error(exc, "openapi") from exc
        serializer.instance = self._listed(connector)

    def _save(self, connector: Connector, secrets: dict[str, Any]) -> None:
        connector_save(
            connector=connector, actor=self.request.user, secrets=secrets, ip_address=client_ip(self.request)
        )

    def _listed(self, connector: Connector) -> Connector:
        """The saved connector as the list shows it (with its action counts)."""
        return connector_list_for_org(organization=self.org).get(pk=connector.pk)

    def _sync_tools(self, connector: Connector) -> None:
        """An MCP connector's tools are synced on every save; the report (or why not) is in the answer."""
        self._report_tool_sync(
            mcp_sync_after_save(
                connector=connector, actor=self.request.user, ip_address=client_ip(self.request)
            )
        )

    def _report_tool_sync(self, synced: SyncReport | McpFailure | None) -> None:
        if synced is not None:
            self.tool_sync = {"error": synced.error} if isinstance(synced, McpFailure) else synced.as_dict()

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        response = super().create(request, *args, **kwargs)
        report = getattr(self, "import_report", None)
        if report is not None:
            response.data["import_report"] = report
        return self._with_tool_sync(response)

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self._with_tool_sync(super().update(request, *args, **kwargs))

    def _with_tool_sync(self, response: Response) -> Response:
        if getattr(self, "tool_sync", None) is not None:
            response.data["tool_sync"] = self.tool_sync
        return response

    def perform_update(self, serializer: Any) -> None:
        connector = serializer.instance
        data, secrets = _settings_and_secrets(serializer)
        for name, value in data.items():
            setattr(connector, name, value)
        try:
            self._save(connector, secrets)
        except DjangoValidationError as exc:
            raise _model_errors(exc) from exc
        self._sync_tools(connector)
        serializer.instance = self._listed(connector)

    def perform_destroy(self, instance: Connector) -> None:
        connector_delete(connector=instance, actor=self.request.user, ip_address=client_ip(self.request))

    @extend_schema(request=ImportOpenAPISerializer, responses=ImportReportSerializer)
    @action(
        detail=True,
        methods=["post"],
        url_path="import-openapi",
        url_name="import-openapi",
        permission_classes=_ADMINS_ONLY,
        serializer_class=ImportOpenAPISerializer,
    )
    def import_openapi(self, request: Request, org_slug: str, pk: str) -> Response:
        """Re-import an OpenAPI document: actions are added, updated in place or deactivated."""
        connector = self.get_object()
        serializer = ImportOpenAPISerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            report = connector_import_openapi(
                connector=connector,
                document_text=serializer.validated_data["document"],
                actor=request.user,
                ip_address=client_ip(request),
            )
        except OpenAPIError as exc:
            raise _openapi_error(exc, "document") from exc
        except DjangoValidationError as exc:
            raise _model_errors(exc) from exc
        return Response(report.as_dict(), status=status.HTTP_200_OK)

    @extend_schema(request=None, responses=ImportReportSerializer)
    @action(
        detail=True,
        methods=["post"],
        url_path="sync-tools",
        url_name="sync-tools",
        permission_classes=_ADMINS_ONLY,
    )
    def sync_tools(self, request: Request, org_slug: str, pk: str) -> Response:
        """List an MCP connector's tools and store them as actions (added, changed, removed, skipped).

        Takes no body (any body is ignored). 400 for a connector that is not MCP or whose settings stop
        the sync, 502 when its server cannot be reached or answers badly."""
        connector = self.get_object()
        if connector.kind != "mcp":
            raise ValidationError({"non_field_errors": [_("Only MCP connectors have tools to sync.")]})
        report = connector_sync_mcp_tools(
            connector=connector, actor=request.user, ip_address=client_ip(request)
        )
        if isinstance(report, McpFailure):
            # The connector's own settings (a refused command, undecryptable credentials): the client's
            # to fix, 400; the server could not be reached or answered badly: 502.
            code = status.HTTP_400_BAD_REQUEST if report.configuration else status.HTTP_502_BAD_GATEWAY
            return Response({"error": report.error}, status=code)
        return Response(report.as_dict(), status=status.HTTP_200_OK)


class ConnectorActionViewSet(OrgScopedViewMixin, viewsets.ModelViewSet):
    """The actions of one connector of the organisation."""

    serializer_class = ConnectorActionSerializer
    queryset = ConnectorAction.objects.all()
    permission_classes = _ADMIN_WRITES

    def connector(self) -> Connector:
        cached = getattr(self, "_connector", None)
        if cached is None:
            cached = connector_get_for_org(organization=self.org, connector_id=self.kwargs["connector_pk"])
            self._connector = cached
        return cached

    def get_base_queryset(self) -> QuerySet:
        if not hasattr(self, "org"):
            return ConnectorAction.objects.none()
        return action_list_for_connector(connector=self.connector())

    def perform_create(self, serializer: Any) -> None:
        connector = self.connector()
        action = ConnectorAction(connector=connector, organization=self.org, **serializer.validated_data)
        self._save(serializer, action)

    def perform_update(self, serializer: Any) -> None:
        action = serializer.instance
        for name, value in serializer.validated_data.items():
            setattr(action, name, value)
        self._save(serializer, action)

    def _save(self, serializer: Any, action: ConnectorAction) -> None:
        try:
            serializer.instance = action_save(
                action=action, actor=self.request.user, ip_address=client_ip(self.request)
            )
        except DjangoValidationError as exc:
            raise _model_errors(exc) from exc

    def perform_destroy(self, instance: ConnectorAction) -> None:
        action_delete(action=instance, actor=self.request.user, ip_address=client_ip(self.request))

    @extend_schema(request=None, responses=ConnectorActionSerializer)
    @action(
        detail=True,
        methods=["post", "delete"],
        url_path="confirm-read",
        url_name="confirm-read",
        permission_classes=_ADMINS_ONLY,
    )
    def confirm_read(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """POST: confirm an MCP tool as a read (audited). DELETE: withdraw it (the tool is a write again).

        The server's annotations are only its claim (``mcp_server_claim``); a tool whose annotations
        contradict each other cannot be confirmed."""
        target = self.get_object()
        decide: Callable[..., ReadConfirmed | ReadWithdrawn | ConfirmRefused] = (
            mcp_action_withdraw_read if request.method == "DELETE" else mcp_action_confirm_read
        )
        outcome = decide(action=target, actor=request.user, ip_address=client_ip(request))
        if isinstance(outcome, ConfirmRefused):
            raise ValidationError(
                {
                    "non_field_errors": [
                        _("This tool cannot be confirmed as a read: %(reason)s.") % {"reason": outcome.reason}
                    ]
                }
            )
        fresh = action_list_for_connector(connector=self.connector()).get(pk=target.pk)
        return Response(ConnectorActionSerializer(fresh).data, status=status.HTTP_200_OK)


class ConnectorCallLogViewSet(
    OrgScopedViewMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Connector calls, newest first; filter with ``?status=``, ``?connector=``, ``?run_id=``,
    ``?conversation_id=``. Read-only: rows are written by tool calls."""

    serializer_class = ConnectorCallLogSerializer
    queryset = ConnectorCallLog.objects.all()
    permission_classes = [permissions.IsAuthenticated, IsOrgMember]
    _FILTERS = {
        "status": "status",
        "connector": "connector_id",
        "run_id": "run_id",
        "conversation_id": "conversation_id",
    }

    def get_base_queryset(self) -> QuerySet:
        if not hasattr(self, "org"):
            return ConnectorCallLog.objects.none()
        return call_log_list_for_org(organization=self.org, user=self.request.user)

    def filter_org_queryset(self, queryset: QuerySet) -> QuerySet:
        params = self.request.query_params
        for param, lookup in self._FILTERS.items():
            value = params.get(param)
            if value:
                try:
                    queryset = queryset.filter(**{lookup: value})
                except (DjangoValidationError, ValueError):  # a malformed id matches nothing
                    return queryset.none()
        return queryset
