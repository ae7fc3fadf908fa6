"""A database connector row and its actions as the adapter's plain configs (the DSN decrypted).

Runs synchronously (it decrypts loaded ORM values); async callers wrap it with ``sync_to_async`` together
with the query that loads the rows.
"""

from __future__ import annotations

from connectors.adapter_types import DatabaseConnectorConfig, SqlActionSpec
from connectors.models import Connector, ConnectorAction


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


def sql_action_spec_for(action: ConnectorAction) -> SqlActionSpec:
    return SqlActionSpec(
        name=action.name,
        sql_template=action.sql_template,
        parameters=action.parameters or {},
        is_write=action.is_write,
        free_form=action.free_form,
        schema_tool=action.schema_tool,
    )
