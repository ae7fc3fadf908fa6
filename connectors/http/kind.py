"""The HTTP kind of connector (:class:`~connectors.kinds.ConnectorKindAdapter`): an API at a base URL,
whose actions are requests (typed in or imported from OpenAPI)."""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Any
from urllib.parse import urljoin

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from connectors import fields
from connectors.adapter_types import ConnectionTestResult, HttpActionSpec, HttpConnectorConfig
from connectors.http.adapter import http_call, http_test_connection
from connectors.http.config import http_action_spec_for, http_config_for
from connectors.http.request import WRITE_METHODS
from connectors.kinds import ActionCalled, CallFacts, ToolText, connection_result_scrubbed
from connectors.models import AuthType, Connector, ConnectorAction, ConnectorKind
from connectors.outbound import PRIVATE_HOST_HINT, validate_outbound_url

# Headers the platform sets itself (or HTTP needs untouched): an idempotency key must not replace them.
_RESERVED_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "host",
        "content-type",
        "content-length",
        "transfer-encoding",
        "connection",
        "accept",
        "user-agent",
    }
)
# The settings each authentication type needs besides the secret.
AUTH_NEEDS: dict[str, list[str]] = {
    AuthType.API_KEY_HEADER: ["auth_key_name"],
    AuthType.API_KEY_QUERY: ["auth_key_name"],
    AuthType.BASIC: ["auth_username"],
    AuthType.OAUTH2_CLIENT_CREDENTIALS: ["oauth_client_id", "oauth_token_url"],
}


def credential_errors(connector: Connector, needs: Mapping[str, list[str]] = AUTH_NEEDS) -> dict[str, Any]:
    """The settings and the secret the connector's authentication type needs but lacks (``needs``: the
    settings each type needs besides the secret); MCP connectors on a URL are checked the same way."""
    errors: dict[str, Any] = {}
    for name in needs.get(connector.auth_type, []):
        if not getattr(connector, name):
            errors[name] = _("Required for this authentication type.")
    if connector.auth_type != AuthType.NONE and not connector.has_secret("auth_secret"):
        errors["auth_secret"] = _("Required for this authentication type.")
    return errors


def outbound_url_errors(connector: Connector, allowed_private_hosts: list[str]) -> dict[str, ValidationError]:
    """The SSRF guard's verdict on the URLs a connector calls (checked again on every call); MCP
    connectors on a URL are checked the same way."""
    errors: dict[str, ValidationError] = {}
    urls = {"base_url": connector.base_url}
    if connector.auth_type == AuthType.OAUTH2_CLIENT_CREDENTIALS and connector.oauth_token_url:
        urls["oauth_token_url"] = urljoin(connector.base_url or "", connector.oauth_token_url)
    for name, url in urls.items():
        try:
            validate_outbound_url(
                url or "", allowed_private_hosts=allowed_private_hosts, allow_hint=PRIVATE_HOST_HINT
            )
        except ValidationError as exc:
            errors[name] = exc
    return errors


class HttpKind:
    """An HTTP API: a base URL, credentials for its scheme, and actions that are requests."""

    kind = ConnectorKind.HTTP.value
    settings: tuple[str, ...] = (
        *fields.HTTP,
        *fields.AUTHENTICATION,
        "auth_secret",
        *fields.NETWORK_LIMITS,
        *fields.PRIVATE_HOSTS,
    )
    call_log_method = ""
    private_arguments: frozenset[str] = frozenset()
    tools_from_connectors = True

    def connector_errors(self, connector: Connector) -> dict[str, Any]:
        errors: dict[str, Any] = {}
        if not connector.base_url:
            errors["base_url"] = _("An HTTP connector needs a base URL.")
        errors.update(credential_errors(connector))
        header = (connector.idempotency_header or "").strip().lower()
        if header in _RESERVED_HEADERS or (
            header
            and connector.auth_type == AuthType.API_KEY_HEADER
            and header == (connector.auth_key_name or "").strip().lower()
        ):
            errors["idempotency_header"] = _(
                "This header is already used for the request itself or its credentials."
            )
        return errors

    def outbound_errors(
        self, connector: Connector, *, allowed_private_hosts: list[str], found: Set[str]
    ) -> dict[str, ValidationError]:
        return outbound_url_errors(connector, allowed_private_hosts)

    def connector_saved(self, connector: Connector) -> None:
        return None

    def action_errors(self, action: ConnectorAction) -> dict[str, Any]:
        errors: dict[str, Any] = {}
        if not action.method:
            errors["method"] = _("An HTTP action needs a method.")
        if not action.path_template.startswith("/"):
            errors["path_template"] = _("The path must start with '/'.")
        if action.sql_template or action.free_form:
            errors["sql_template"] = _("HTTP actions have no SQL.")
        return errors

    def action_is_write(self, action: ConnectorAction) -> bool:
        """POST, PUT, PATCH and DELETE write."""
        return action.method.upper() in WRITE_METHODS

    def call_write_reason(self, action: CallFacts, arguments: Mapping[str, Any]) -> str | None:
        """The action's flag decides (an admin may declare a POST search a read)."""
        return "this action writes data" if action.is_write else None

    def tool_text(self, action: ConnectorAction) -> ToolText:
        return ToolText(target=f"{action.method or 'GET'} {action.path_template}")

    def tool_timeout(self, action: ConnectorAction) -> float:
        connector = action.connector
        attempts = 1 if action.is_write else 3  # the adapter retries idempotent calls
        return (connector.connect_timeout + connector.read_timeout) * attempts + 5

    def call_config(self, connector: Connector) -> HttpConnectorConfig:
        return http_config_for(connector)

    def action_spec(self, action: ConnectorAction) -> HttpActionSpec:
        return http_action_spec_for(action)

    async def call(
        self,
        config: HttpConnectorConfig,
        spec: HttpActionSpec,
        arguments: Mapping[str, Any],
        *,
        idempotency_key: str | None,
        is_write: bool,
    ) -> ActionCalled:
        return ActionCalled(await http_call(config, spec, arguments, idempotency_key=idempotency_key))

    async def test_connection(
        self, config: HttpConnectorConfig, secrets: tuple[str, ...]
    ) -> ConnectionTestResult:
        return connection_result_scrubbed(await http_test_connection(config), secrets)
