"""An HTTP connector row and its actions as the adapter's plain configs (credentials decrypted).

Runs synchronously (it decrypts loaded ORM values); async callers wrap it with ``sync_to_async`` together
with the query that loads the rows.
"""

from __future__ import annotations

from connectors.adapter_types import HttpActionSpec, HttpAuth, HttpConnectorConfig
from connectors.models import AuthType, Connector, ConnectorAction


def http_auth_for(connector: Connector) -> HttpAuth:
    """The connector's authentication, with its secret decrypted into the field its scheme uses."""
    secret = connector.auth_secret
    kind = connector.auth_type
    if kind == AuthType.API_KEY_HEADER:
        return HttpAuth(type="api_key_header", api_key=secret, api_key_name=connector.auth_key_name)
    if kind == AuthType.API_KEY_QUERY:
        return HttpAuth(type="api_key_query", api_key=secret, api_key_name=connector.auth_key_name)
    if kind == AuthType.BEARER:
        return HttpAuth(type="bearer", token=secret)
    if kind == AuthType.BASIC:
        return HttpAuth(type="basic", username=connector.auth_username, password=secret)
    if kind == AuthType.OAUTH2_CLIENT_CREDENTIALS:
        return HttpAuth(
            type="oauth2_client_credentials",
            client_id=connector.oauth_client_id,
            client_secret=secret,
            token_url=connector.oauth_token_url,
            scope=connector.oauth_scope,
        )
    return HttpAuth()


def http_config_for(connector: Connector) -> HttpConnectorConfig:
    """The HTTP adapter's config for ``connector`` (decrypts its credentials)."""
    return HttpConnectorConfig(
        connector_id=str(connector.pk),
        base_url=connector.base_url,
        auth=http_auth_for(connector),
        connect_timeout=connector.connect_timeout,
        read_timeout=connector.read_timeout,
        max_response_bytes=connector.max_response_bytes,
        allowed_private_hosts=tuple(connector.allowed_private_hosts or ()),
        idempotency_header=connector.idempotency_header.strip(),
    )


def http_action_spec_for(action: ConnectorAction) -> HttpActionSpec:
    return HttpActionSpec(
        name=action.name,
        method=action.method or "GET",
        path_template=action.path_template,
        parameters=action.parameters or {},
        param_locations=action.param_locations or {},
    )
