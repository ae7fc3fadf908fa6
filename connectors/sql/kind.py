"""The SQL database kind of connector (:class:`~connectors.kinds.ConnectorKindAdapter`): a DSN for one of
the engines, whose actions are SQL templates, free-form read-only SQL or the schema tools."""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from connectors import fields
from connectors.adapter_types import (
    ConnectionFailed,
    ConnectionTestResult,
    ConnectionWorks,
    DatabaseConnectorConfig,
    SqlActionSpec,
)
from connectors.kinds import ActionCalled, CallFacts, ToolText, connection_result_scrubbed
from connectors.models import Connector, ConnectorAction, ConnectorKind, ensure_schema_tools
from connectors.outbound import PRIVATE_HOST_HINT, validate_outbound_host
from connectors.sql.adapter import db_call, db_test_connection
from connectors.sql.config import database_config_for, sql_action_spec_for
from connectors.sql.dsn_errors import DsnError
from connectors.sql.guard import MYSQL_ENGINES, classify_sql, is_write_sql
from connectors.sql.mysql.dsn import is_mysql_dsn, parse_mysql_dsn
from connectors.sql.postgres.dsn import dsn_hosts, dsn_params


def dsn_targets(connector: Connector) -> list[tuple[str, int]]:
    """The ``(host, port)`` pairs the connector's DSN connects to, parsed for its engine (raises DsnError)."""
    if connector.engine in MYSQL_ENGINES:
        parsed = parse_mysql_dsn(connector.dsn)
        return [(parsed.host, parsed.port)]
    return dsn_hosts(dsn_params(connector.dsn))


#: The free-form SQL tool's one argument (``connectors.tools.FREE_FORM_PARAMETERS``).
FREE_FORM_SQL_ARGUMENT = "sql"


class SqlKind:
    """A SQL database: PostgreSQL and its family, MySQL or MariaDB, reached at the hosts of its DSN."""

    kind = ConnectorKind.DATABASE.value
    settings: tuple[str, ...] = (
        *fields.DATABASE_ENGINE,
        "dsn",
        *fields.DATABASE_LIMITS,
        "connect_timeout",
        "max_response_bytes",
        *fields.PRIVATE_HOSTS,
    )
    call_log_method = ""
    private_arguments: frozenset[str] = frozenset()
    tools_from_connectors = True

    def connector_errors(self, connector: Connector) -> dict[str, Any]:
        """A DSN that fits the engine (the messages never contain the DSN)."""
        if not connector.has_secret("dsn"):
            return {"dsn": _("A database connector needs a DSN.")}
        if connector.engine not in MYSQL_ENGINES and is_mysql_dsn(connector.dsn):
            return {"engine": _("This is a MySQL DSN: choose MySQL or MariaDB as the engine.")}
        try:
            dsn_targets(connector)
        except DsnError as exc:
            return {"dsn": _("The DSN is not usable: %(reason)s") % {"reason": exc}}
        return {}

    def outbound_errors(
        self, connector: Connector, *, allowed_private_hosts: list[str], found: Set[str]
    ) -> dict[str, ValidationError]:
        """The SSRF guard's verdict on every host of the DSN, as for URLs (checked again on every
        connection); the messages name the host, never the DSN (it holds the password)."""
        if found & {"dsn", "engine"}:
            return {}
        refusals: list[ValidationError] = []
        for host, port in dict.fromkeys(dsn_targets(connector)):
            try:
                validate_outbound_host(
                    host, port, allowed_private_hosts=allowed_private_hosts, allow_hint=PRIVATE_HOST_HINT
                )
            except ValidationError as exc:
                refusals.append(exc)
        return {"dsn": ValidationError(refusals)} if refusals else {}

    def connector_saved(self, connector: Connector) -> None:
        """A database connector has its ``list_tables`` and ``describe_table`` actions."""
        ensure_schema_tools(connector)

    def action_errors(self, action: ConnectorAction) -> dict[str, Any]:
        errors: dict[str, Any] = {}
        if action.method or action.path_template:
            errors["method"] = _("Database actions have no HTTP method or path.")
        if action.schema_tool and (action.sql_template.strip() or action.free_form):
            errors["sql_template"] = _("A schema tool has no SQL template.")
        if action.free_form and action.sql_template.strip():
            errors["sql_template"] = _("A free-form action has no SQL template; the agent writes the query.")
        if not action.free_form and not action.schema_tool and not action.sql_template.strip():
            errors["sql_template"] = _("Give an SQL template or allow free-form read-only SQL.")
        return errors

    def action_is_write(self, action: ConnectorAction) -> bool:
        """A template that is not one plain read statement writes; free-form SQL and the schema tools
        never do (the SQL guard refuses anything but a read)."""
        if action.free_form or action.schema_tool or not action.sql_template.strip():
            return False
        return is_write_sql(action.sql_template, engine=action.connector.engine)

    def call_write_reason(self, action: CallFacts, arguments: Mapping[str, Any]) -> str | None:
        """Judged from the SQL itself whatever the flag says: the template, or the free-form statement in
        the arguments, must be one plain read statement; the schema tools only read the catalogue."""
        if action.schema_tool:
            return None
        if action.free_form:
            sql = arguments.get(FREE_FORM_SQL_ARGUMENT)
            verdict = classify_sql(sql if isinstance(sql, str) else "", engine=action.engine)
            return None if verdict.is_single_read else verdict.reason
        if action.is_write or is_write_sql(action.sql_template, engine=action.engine):
            return "the SQL of this action changes data"
        return None

    def tool_text(self, action: ConnectorAction) -> ToolText:
        connector = action.connector
        if not action.free_form:
            return ToolText(target="SQL")
        return ToolText(
            target="free-form read-only SQL",
            summary=f"Run one read-only SQL query on the {connector.name} database",
            notes=(
                f"Only one plain read statement in {connector.get_engine_display()}'s SQL is accepted;"
                f" at most {connector.max_rows} rows are returned.",
            ),
        )

    def tool_timeout(self, action: ConnectorAction) -> float:
        connector = action.connector
        return connector.connect_timeout + connector.statement_timeout_ms / 1000 + 5

    def call_config(self, connector: Connector) -> DatabaseConnectorConfig:
        return database_config_for(connector)

    def action_spec(self, action: ConnectorAction) -> SqlActionSpec:
        return sql_action_spec_for(action)

    async def call(
        self,
        config: DatabaseConnectorConfig,
        spec: SqlActionSpec,
        arguments: Mapping[str, Any],
        *,
        idempotency_key: str | None,
        is_write: bool,
    ) -> ActionCalled:
        return ActionCalled(await db_call(config, spec, arguments))

    async def test_connection(
        self, config: DatabaseConnectorConfig, secrets: tuple[str, ...]
    ) -> ConnectionTestResult:
        outcome = await db_test_connection(config)
        result: ConnectionTestResult = (
            ConnectionWorks(detail=outcome.content, latency_ms=outcome.latency_ms)
            if outcome.status == "ok"
            else ConnectionFailed(reason=outcome.error, latency_ms=outcome.latency_ms)
        )
        return connection_result_scrubbed(result, secrets)
