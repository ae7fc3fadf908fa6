"""Connector and action rows to the adapters' plain configs (``connectors.adapter_types``).

These functions decrypt secrets, so they touch the ORM's loaded values only and run synchronously; async
callers wrap them with ``sync_to_async`` together with the query that loads the rows.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from connectors.adapter_types import (
    DatabaseConnectorConfig,
    HttpActionSpec,
    HttpAuth,
    HttpConnectorConfig,
    SqlActionSpec,
)
from connectors.models import AuthType, Connector, ConnectorAction
from connectors.sql.dsn import dsn_password
from platform_core.crypto import SecretDecryptError

logger = logging.getLogger(__name__)


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


def database_config_for(connector: Connector) -> DatabaseConnectorConfig:
    """The database adapter's config for ``connector`` (decrypts its DSN)."""
    return DatabaseConnectorConfig(
        connector_id=str(connector.pk),
        dsn=connector.dsn,
        engine=connector.engine,
        statement_timeout_ms=connector.statement_timeout_ms,
        connect_timeout=connector.connect_timeout,
        max_rows=connector.max_rows,
        max_result_bytes=connector.max_response_bytes,
        allowed_private_hosts=tuple(connector.allowed_private_hosts or ()),
        allowed_tables=tuple(connector.schema_allow_list or ()),
        schema_samples=connector.schema_samples,
        schema_cache_seconds=connector.schema_cache_seconds,
    )


def http_action_spec_for(action: ConnectorAction) -> HttpActionSpec:
    return HttpActionSpec(
        name=action.name,
        method=action.method or "GET",
        path_template=action.path_template,
        parameters=action.parameters or {},
        param_locations=action.param_locations or {},
    )


def sql_action_spec_for(action: ConnectorAction) -> SqlActionSpec:
    return SqlActionSpec(
        name=action.name,
        sql_template=action.sql_template,
        parameters=action.parameters or {},
        is_write=action.is_write,
        free_form=action.free_form,
        schema_tool=action.schema_tool,
    )


def run_secret_values(actions: Iterable[ConnectorAction]) -> tuple[str, ...]:
    """The secret values of the connectors behind a run's actions (each connector once), to redact them
    from the run's events and checkpoints; a connector whose secrets cannot be decrypted adds none."""
    values: list[str] = []
    seen: set[Any] = set()
    for action in actions:
        connector = action.connector
        if connector.pk in seen:
            continue
        seen.add(connector.pk)
        try:
            values.extend(connector_secret_values(connector))
        except SecretDecryptError:
            logger.warning("connector %s: its secrets cannot be decrypted for redaction", connector.pk)
    return tuple(values)


def connector_secrets_for_redaction(organization_id: int, connector_id: Any) -> tuple[str, ...]:
    """The secret values of the organisation's connector ``connector_id``, to redact them from what is
    stored or shown; none when there is no such connector or its secrets cannot be read (an undecryptable
    secret must not stop a record or a request; key-based redaction still runs)."""
    connector = Connector.objects.filter(pk=connector_id, organization_id=organization_id).first()
    if connector is None:
        return ()
    try:
        return tuple(connector_secret_values(connector))
    except Exception:
        logger.warning("could not read the secrets of connector %s for redaction", connector_id)
        return ()


def connector_secret_values(connector: Connector) -> tuple[str, ...]:
    """Every secret string of the connector (decrypted), for redaction; a DSN's password on its own too."""
    values = [connector.auth_secret]
    dsn = connector.dsn
    if dsn:
        values.extend((dsn, dsn_password(dsn)))
    return tuple(v for v in values if v)
