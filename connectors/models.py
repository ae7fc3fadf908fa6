"""Connectors (an organisation's HTTP APIs and SQL databases), their actions, and the call log.

Credentials and DSNs are :class:`~platform_core.crypto.EncryptedTextField` columns bound to the row
(:class:`~platform_core.secret_rows.SecretHoldingModel`); the other rows' primary keys are UUIDs
generated in Python too.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from connectors.demo.api.models import (  # noqa: F401  (models of this app)
    DemoIdempotentRequest,
    DemoPayment,
    DemoPurchaseOrder,
)
from connectors.idempotency import DEFAULT_IDEMPOTENCY_HEADER
from connectors.kinds import adapter_for
from platform_core.crypto import EncryptedTextField
from platform_core.models import OrgOwnedModel
from platform_core.secret_rows import SecretHoldingModel

_HOST_RE = re.compile(
    r"^(\[[0-9A-Fa-f:.]+\]|[0-9A-Fa-f:]*:[0-9A-Fa-f:.]+|[A-Za-z0-9]([A-Za-z0-9.-]{0,252}[A-Za-z0-9])?)$"
)

_SCHEMA_ENTRY_RE = re.compile(r"^[^.\s]{1,64}(\.[^.\s]{1,64})?$")

connector_name_validator = RegexValidator(
    r"^[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*$",
    _("Use letters, digits and single hyphens or underscores (it becomes part of tool names)."),
)
header_name_validator = RegexValidator(
    r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$", _("Give an HTTP header name, such as 'Idempotency-Key'.")
)
action_name_validator = RegexValidator(
    r"^[A-Za-z0-9_-]+$", _("Use letters, digits, hyphens and underscores only.")
)


class ConnectorKind(models.TextChoices):
    HTTP = "http", _("HTTP API")
    DATABASE = "database", _("SQL database")
    MCP = "mcp", _("MCP server")
    # Made with its knowledge base (agents.knowledge), never on its own: its one action searches it.
    KNOWLEDGE = "knowledge", _("Knowledge base")
    # The organisation's skill library (agents.skills), one per organisation, made with its first skill:
    # its one action reads a skill.
    SKILLS = "skills", _("Skill library")
    MEMORY = "memory", _("Memory")


class McpTransport(models.TextChoices):
    """How an MCP connector reaches its server."""

    STREAMABLE_HTTP = "streamable_http", _("Streamable HTTP")
    SSE = "sse", _("HTTP with server-sent events (older servers)")
    STDIO = "stdio", _("Local command (stdio, operator-enabled only)")


class DatabaseEngine(models.TextChoices):
    """The server a database connector talks to; MySQL and MariaDB share one driver and SQL dialect."""

    POSTGRESQL = "postgresql", _("PostgreSQL")
    MYSQL = "mysql", _("MySQL")
    MARIADB = "mariadb", _("MariaDB")
    # The PostgreSQL family (connectors.sql.postgres.family): the PostgreSQL driver and SQL guard.
    KINGBASE = "kingbase", _("KingbaseES")
    OPENGAUSS = "opengauss", _("openGauss")
    HIGHGO = "highgo", _("HighGo")


class AuthType(models.TextChoices):
    NONE = "none", _("None")
    API_KEY_HEADER = "api_key_header", _("API key in a header")
    API_KEY_QUERY = "api_key_query", _("API key in the query string")
    BEARER = "bearer", _("Bearer token")
    BASIC = "basic", _("Basic (username and password)")
    OAUTH2_CLIENT_CREDENTIALS = "oauth2_client_credentials", _("OAuth2 client credentials")


class Connector(SecretHoldingModel):
    """One system of an organisation that agents may call: an HTTP API or a SQL database."""

    name = models.CharField(
        _("name"),
        max_length=40,
        validators=[connector_name_validator],
        help_text=_("Short identifier such as 'erp'; tools are named '<connector>__<action>'."),
    )
    description = models.TextField(
        _("description"), blank=True, help_text=_("What this system is; agents read it in tool descriptions.")
    )
    kind = models.CharField(
        _("kind"), max_length=16, choices=ConnectorKind.choices, default=ConnectorKind.HTTP
    )
    base_url = models.URLField(_("base URL"), max_length=500, blank=True)
    engine = models.CharField(
        _("database engine"),
        max_length=16,
        choices=DatabaseEngine.choices,
        default=DatabaseEngine.POSTGRESQL,
        help_text=_(
            "For database connectors. PostgreSQL DSN: 'postgresql://user:password@host:5432/db'; "
            "MySQL or MariaDB DSN: 'mysql://user:password@host:3306/db?ssl_mode=verify_identity'."
        ),
    )
    dsn = EncryptedTextField(_("database DSN"))
    auth_type = models.CharField(
        _("authentication"), max_length=32, choices=AuthType.choices, default=AuthType.NONE
    )
    auth_key_name = models.CharField(
        _("API key name"),
        max_length=100,
        blank=True,
        help_text=_("Header or query parameter that carries the API key, e.g. 'X-API-Key'."),
    )
    auth_username = models.CharField(_("username"), max_length=200, blank=True)
    oauth_client_id = models.CharField(_("OAuth2 client ID"), max_length=200, blank=True)
    oauth_token_url = models.URLField(_("OAuth2 token URL"), max_length=500, blank=True)
    oauth_scope = models.CharField(_("OAuth2 scope"), max_length=500, blank=True)
    auth_secret = EncryptedTextField(_("secret"))
    idempotency_header = models.CharField(
        _("idempotency key header"),
        max_length=100,
        blank=True,
        default=DEFAULT_IDEMPOTENCY_HEADER,
        validators=[header_name_validator],
        help_text=_(
            "Header that carries a key unique to each agent tool call on POST, PUT, PATCH and DELETE "
            "requests, so the API can recognise the same call sent twice. Leave empty to send none."
        ),
    )
    connect_timeout = models.FloatField(
        _("connect timeout (s)"), default=5.0, validators=[MinValueValidator(0.1), MaxValueValidator(60)]
    )
    read_timeout = models.FloatField(
        _("read timeout (s)"), default=30.0, validators=[MinValueValidator(0.1), MaxValueValidator(600)]
    )
    max_response_bytes = models.PositiveIntegerField(
        _("maximum response size (bytes)"),
        default=1_000_000,
        validators=[MinValueValidator(1_000), MaxValueValidator(50_000_000)],
    )
    statement_timeout_ms = models.PositiveIntegerField(
        _("statement timeout (ms)"),
        default=5_000,
        validators=[MinValueValidator(100), MaxValueValidator(600_000)],
    )
    max_rows = models.PositiveIntegerField(
        _("maximum rows"), default=200, validators=[MinValueValidator(1), MaxValueValidator(10_000)]
    )
    schema_allow_list = models.JSONField(
        _("available schemas and tables"),
        default=list,
        blank=True,
        help_text=_(
            "For database connectors: schemas ('sales') or tables ('sales.orders') the agent may see and "
            "query. Leave empty for everything the account can read."
        ),
    )
    schema_samples = models.BooleanField(
        _("sample rows in table descriptions"),
        default=False,
        help_text=_("Let the agent see a few rows of a table when it asks for the table's description."),
    )
    schema_cache_seconds = models.PositiveIntegerField(
        _("schema cache (s)"),
        default=300,
        validators=[MaxValueValidator(86_400)],
        help_text=_("How long table lists and descriptions are reused; 0 reads them anew every time."),
    )
    allowed_private_hosts = models.JSONField(
        _("allowed private hosts"),
        default=list,
        blank=True,
        help_text=_(
            "Host names this connector may reach even though they resolve to private or loopback "
            "addresses. Leave empty unless the system is inside your network."
        ),
    )
    mcp_transport = models.CharField(
        _("MCP transport"),
        max_length=16,
        choices=McpTransport.choices,
        default=McpTransport.STREAMABLE_HTTP,
        help_text=_("For MCP connectors: the base URL is the server's MCP endpoint, e.g. https://host/mcp."),
    )
    mcp_command = models.JSONField(
        _("MCP command"),
        default=list,
        blank=True,
        help_text=_(
            "For stdio MCP connectors: the command and its arguments as a JSON list, e.g. "
            '["mcp-server-time", "--local-timezone", "UTC"]. The operator must allow the command.'
        ),
    )
    is_active = models.BooleanField(_("active"), default=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    SECRET_FIELDS = ("auth_secret", "dsn")

    class Meta:
        verbose_name = _("connector")
        verbose_name_plural = _("connectors")
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="unique_connector_name_per_org"),
            # The skill library's connector is one per organisation (agents.skills.library).
            models.UniqueConstraint(
                fields=["organization"],
                condition=models.Q(kind="skills"),
                name="one_skill_library_per_organization",
            ),
            # So is the memory's (agents.memory.connector).
            models.UniqueConstraint(
                fields=["organization"],
                condition=models.Q(kind="memory"),
                name="one_memory_connector_per_organization",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        errors: dict[str, Any] = {}
        # Each kind says what its connectors need (connectors.kinds); a kind that is not one of the choices
        # is the kind field's own error.
        adapter = adapter_for(self.kind) if self.kind in ConnectorKind.values else None
        if adapter is not None:
            errors.update(adapter.connector_errors(self))
        entries = self.schema_allow_list
        if not isinstance(entries, list) or not all(
            isinstance(e, str) and _SCHEMA_ENTRY_RE.match(e.strip()) for e in entries
        ):
            errors["schema_allow_list"] = _("Give a list of schema names or schema.table names.")
        hosts = self.allowed_private_hosts
        if not isinstance(hosts, list) or not all(isinstance(h, str) and _HOST_RE.match(h) for h in hosts):
            errors["allowed_private_hosts"] = _(
                "Give a list of host names or IP addresses, without scheme, port or path."
            )
        elif adapter is not None:
            errors.update(adapter.outbound_errors(self, allowed_private_hosts=hosts, found=set(errors)))
        if errors:
            raise ValidationError(errors)


class SchemaTool(models.TextChoices):
    LIST_TABLES = "list_tables", _("List tables")
    DESCRIBE_TABLE = "describe_table", _("Describe a table")


class ActionSource(models.TextChoices):
    MANUAL = "manual", _("Created by hand")
    OPENAPI = "openapi", _("Imported from OpenAPI")
    MCP = "mcp", _("Discovered on an MCP server")
    SCHEMA = "schema", _("Generated from the database schema")


class HttpMethod(models.TextChoices):
    GET = "GET", "GET"
    POST = "POST", "POST"
    PUT = "PUT", "PUT"
    PATCH = "PATCH", "PATCH"
    DELETE = "DELETE", "DELETE"
    HEAD = "HEAD", "HEAD"


class ConnectorAction(OrgOwnedModel):
    """One operation of a connector that becomes an agent tool.

    ``is_write`` follows the HTTP method (POST, PUT, PATCH, DELETE) or the SQL template unless an admin
    set ``is_write_override``; an MCP tool is a write until an admin confirmed it as a read
    (:mod:`connectors.mcp.confirm`). It is what read-only mode and approval policies look at. The
    organisation is always the connector's.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    connector = models.ForeignKey(
        Connector, verbose_name=_("connector"), on_delete=models.CASCADE, related_name="actions"
    )
    name = models.CharField(_("name"), max_length=64, validators=[action_name_validator])
    description = models.TextField(_("description"), blank=True)
    method = models.CharField(_("HTTP method"), max_length=8, choices=HttpMethod.choices, blank=True)
    path_template = models.CharField(
        _("path template"), max_length=500, blank=True, help_text=_("For example /orders/{order_id}")
    )
    sql_template = models.TextField(
        _("SQL template"), blank=True, help_text=_("Parameterised SQL with %(name)s placeholders.")
    )
    schema_tool = models.CharField(
        _("schema tool"),
        max_length=16,
        choices=SchemaTool.choices,
        blank=True,
        help_text=_("Set by the platform on a database connector's list_tables and describe_table actions."),
    )
    free_form = models.BooleanField(
        _("free-form read-only SQL"),
        default=False,
        help_text=_("Let the agent write its own query; only one plain read statement is accepted."),
    )
    parameters = models.JSONField(_("parameters (JSON schema)"), default=dict, blank=True)
    param_locations = models.JSONField(
        _("parameter locations"),
        default=dict,
        blank=True,
        help_text=_("Argument name to 'path', 'query', 'header' or 'body'."),
    )
    mcp_tool = models.CharField(
        _("MCP tool"),
        max_length=200,
        blank=True,
        help_text=_("Set by 'Sync tools': the tool's name on the MCP server."),
    )
    mcp_annotations = models.JSONField(
        _("MCP tool annotations"),
        default=dict,
        blank=True,
        help_text=_(
            "The hints the MCP server gave (readOnlyHint, destructiveHint, idempotentHint): the server's "
            "claim, not trusted on its own."
        ),
    )
    mcp_read_confirmed_at = models.DateTimeField(
        _("confirmed as a read at"),
        null=True,
        blank=True,
        editable=False,
        help_text=_(
            "An MCP tool is a write until an admin confirms it as a read; a re-sync that changes its "
            "annotations, input schema or description withdraws the confirmation."
        ),
    )
    mcp_read_confirmed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("confirmed as a read by"),
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        editable=False,
        related_name="+",
    )
    is_write = models.BooleanField(_("writes data"), default=False)
    is_write_override = models.BooleanField(
        _("override 'writes data'"),
        default=False,
        help_text=_(
            "Keep 'writes data' as set here instead of deriving it from the method, SQL or MCP annotations."
        ),
    )
    source = models.CharField(
        _("source"), max_length=16, choices=ActionSource.choices, default=ActionSource.MANUAL
    )
    removed_by_import_at = models.DateTimeField(
        _("removed by import at"),
        null=True,
        blank=True,
        help_text=_("Set when a re-import no longer found this operation; the action was deactivated."),
    )
    is_active = models.BooleanField(_("active"), default=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("connector action")
        verbose_name_plural = _("connector actions")
        ordering = ["connector__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["connector", "name"], name="unique_action_name_per_connector")
        ]

    def __str__(self) -> str:
        return f"{self.connector.name}.{self.name}" if self.connector_id else self.name

    def clean_fields(self, exclude: Any = None) -> None:
        if self.connector_id is not None:
            self.organization_id = self.connector.organization_id
        super().clean_fields(exclude)

    def clean(self) -> None:
        errors: dict[str, Any] = {}
        connector = self.connector if self.connector_id else None
        if connector is not None and connector.kind in ConnectorKind.values:
            errors.update(adapter_for(connector.kind).action_errors(self))
        if self.free_form and self.is_write_override and self.is_write:
            errors["is_write"] = _("Free-form SQL is always read-only.")
        if self.mcp_tool and self.is_write_override and not self.is_write:
            errors["is_write"] = _(
                "An MCP tool becomes a read only when an admin confirms it as a read ('Confirm as read')."
            )
        if not isinstance(self.parameters, dict) or self.parameters.get("type", "object") != "object":
            errors["parameters"] = _("The parameters must be a JSON schema of type 'object'.")
        else:
            problem = _schema_problem(self.parameters)
            if problem:
                errors["parameters"] = problem
        locations = self.param_locations
        if not isinstance(locations, dict) or not all(
            v in ("path", "query", "header", "body") for v in locations.values()
        ):
            errors["param_locations"] = _("Each location must be 'path', 'query', 'header' or 'body'.")
        if errors:
            raise ValidationError(errors)

    def derived_is_write(self) -> bool:
        """Whether the action writes, as its connector's kind judges it (:mod:`connectors.kinds`): from its
        HTTP method, its SQL (free-form SQL and the schema tools never write), or whether an admin confirmed
        its MCP tool as a read."""
        return adapter_for(self.connector.kind).action_is_write(self)

    def save(self, *args: Any, **kwargs: Any) -> None:
        # Invariants every writer (admin inline, API, import) must keep: same org as the connector,
        # and is_write derived unless an admin overrode it.
        if self.connector_id is not None:
            self.organization_id = self.connector.organization_id
        if not self.is_write_override:
            self.is_write = self.derived_is_write()
        update_fields = kwargs.get("update_fields")
        if update_fields is not None:
            kwargs["update_fields"] = {*update_fields, "organization", "is_write"}
        super().save(*args, **kwargs)


_SCHEMA_TOOL_ACTIONS: dict[str, tuple[Any, dict[str, Any]]] = {
    SchemaTool.LIST_TABLES: (
        _(
            "List the schemas, tables and views of this database that can be queried, with their comments "
            "and estimated row counts."
        ),
        {"type": "object", "properties": {}, "additionalProperties": False},
    ),
    SchemaTool.DESCRIBE_TABLE: (
        _(
            "Describe one table or view: its columns (type, nullability, key, comment) and keys, and a few "
            "sample rows when the admin allows them."
        ),
        {
            "type": "object",
            "properties": {
                "table": {"type": "string", "description": "The table or view, as list_tables shows it."},
                "schema": {
                    "type": "string",
                    "description": "Its schema, as list_tables shows it (optional).",
                },
            },
            "required": ["table"],
            "additionalProperties": False,
        },
    ),
}


def ensure_schema_tools(connector: Connector) -> None:
    """Give a database connector its ``list_tables`` and ``describe_table`` actions (once; an admin may
    deactivate them, and an action of the same name the admin made is left alone)."""
    existing = set(
        ConnectorAction.objects.filter(connector=connector, name__in=list(_SCHEMA_TOOL_ACTIONS)).values_list(
            "name", flat=True
        )
    )
    for tool, (description, parameters) in _SCHEMA_TOOL_ACTIONS.items():
        if tool not in existing:
            ConnectorAction.objects.create(
                connector=connector,
                organization_id=connector.organization_id,
                name=str(tool),
                description=str(description),
                schema_tool=str(tool),
                parameters=parameters,
                source=ActionSource.SCHEMA,
            )


def _schema_problem(schema: dict[str, Any]) -> str:
    from jsonschema import validators
    from jsonschema.exceptions import SchemaError

    try:
        validators.validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        return str(_("Not a valid JSON schema: %(error)s") % {"error": exc.message})
    return ""


class CallStatus(models.TextChoices):
    OK = "ok", _("OK")
    ERROR = "error", _("Error")
    BLOCKED_READ_ONLY = "blocked_read_only", _("Blocked by read-only mode")
    BLOCKED_RATE_LIMIT = "blocked_rate_limit", _("Blocked by a rate limit")
    REJECTED = "rejected", _("Rejected by an approver")
    EXPIRED = "expired", _("Approval expired")


class ConnectorCallLog(OrgOwnedModel):
    """One call of a connector action by an agent, with redacted arguments. Written once, never edited."""

    connector = models.ForeignKey(
        Connector,
        verbose_name=_("connector"),
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="call_logs",
    )
    action = models.ForeignKey(
        ConnectorAction,
        verbose_name=_("action"),
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="call_logs",
    )
    tool_name = models.CharField(_("tool"), max_length=64)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    agent_id = models.CharField(_("agent"), max_length=64, blank=True, db_index=True)
    conversation_id = models.CharField(_("conversation"), max_length=64, blank=True, db_index=True)
    run_id = models.CharField(_("run"), max_length=64, blank=True, db_index=True)
    tool_call_id = models.CharField(_("tool call ID"), max_length=128, blank=True)
    arguments = models.JSONField(_("arguments (redacted)"), default=dict, blank=True)
    status = models.CharField(_("status"), max_length=24, choices=CallStatus.choices, db_index=True)
    is_write = models.BooleanField(_("write"), default=False)
    http_status = models.PositiveSmallIntegerField(_("HTTP status"), null=True, blank=True)
    row_count = models.PositiveIntegerField(_("rows"), null=True, blank=True)
    latency_ms = models.FloatField(_("latency (ms)"), default=0.0)
    request_bytes = models.PositiveIntegerField(_("request size (bytes)"), default=0)
    response_bytes = models.PositiveIntegerField(_("response size (bytes)"), default=0)
    error = models.TextField(_("error"), blank=True)
    approval_ref = models.CharField(_("approval"), max_length=64, blank=True)
    mcp_method = models.CharField(
        _("MCP method"), max_length=64, blank=True, help_text=_("For MCP connectors, e.g. 'tools/call'.")
    )
    retrieved = models.JSONField(
        _("retrieved"),
        default=list,
        blank=True,
        help_text=_(
            "For knowledge-base searches: the documents and passages returned, with their scores; for "
            "skill reads: the skill, its version and the file read."
        ),
    )
    created_at = models.DateTimeField(_("time"), default=timezone.now, db_index=True)

    class Meta:
        verbose_name = _("connector call")
        verbose_name_plural = _("connector call log")
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["organization", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.tool_name} {self.status}"
