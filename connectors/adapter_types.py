"""Plain value types shared by the connector adapters and the Django side.

The adapters (``http/adapter.py``, ``sql/adapter.py``) know nothing of Django models: the connectors app
turns a ``Connector`` row (with its decrypted secrets) into one of these configs at call time, and turns a
``CallOutcome`` into a ``ConnectorCallLog`` row and an engine ``ToolResult``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

AuthType = Literal["none", "api_key_header", "api_key_query", "bearer", "basic", "oauth2_client_credentials"]


@dataclass(frozen=True, slots=True)
class HttpAuth:
    """Credentials of an HTTP connector, already decrypted. Never logged or put into an outcome."""

    type: AuthType = "none"
    api_key: str = ""
    api_key_name: str = ""  # the header or query parameter name for api_key_* types
    token: str = ""  # bearer
    username: str = ""  # basic
    password: str = ""  # basic
    client_id: str = ""  # oauth2 client credentials
    client_secret: str = ""
    token_url: str = ""
    scope: str = ""
    # How the client authenticates at token_url: HTTP basic (RFC 6749's default) or form fields.
    token_auth_method: Literal["client_secret_basic", "client_secret_post"] = "client_secret_basic"

    def secret_values(self) -> tuple[str, ...]:
        """Every secret string, so callers can redact them from errors and logs."""
        return tuple(v for v in (self.api_key, self.token, self.password, self.client_secret) if v)


@dataclass(frozen=True, slots=True)
class HttpConnectorConfig:
    """One HTTP connector: where it is, how to authenticate, and its limits."""

    connector_id: str  # stable id; circuit breakers and token caches are keyed by it
    base_url: str
    auth: HttpAuth = field(default_factory=HttpAuth)
    connect_timeout: float = 5.0
    read_timeout: float = 30.0
    max_response_bytes: int = 1_000_000
    allowed_private_hosts: tuple[str, ...] = ()  # host names an admin explicitly allowed (SSRF exception)
    default_headers: Mapping[str, str] = field(default_factory=dict)
    max_retries: int = 2  # idempotent methods only
    retry_backoff_seconds: float = 0.25  # first retry delay; doubles per retry
    circuit_failure_threshold: int = 5  # consecutive failed calls that open the circuit
    circuit_open_seconds: float = 30.0  # how long an open circuit refuses calls before one trial
    # The header carrying a run's idempotency key on POST/PUT/PATCH/DELETE calls; "" sends none.
    idempotency_header: str = "Idempotency-Key"


@dataclass(frozen=True, slots=True)
class HttpActionSpec:
    """One HTTP operation. ``parameters`` is the JSON schema the LLM fills in.

    ``param_locations`` maps each top-level argument to ``path``, ``query``, ``header`` or ``body``;
    arguments not listed go to the query string for GET/HEAD/DELETE and to the JSON body otherwise.
    """

    name: str
    method: str
    path_template: str  # "/orders/{order_id}"
    parameters: Mapping[str, Any] = field(default_factory=dict)
    param_locations: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DatabaseConnectorConfig:
    """One SQL database connector (PostgreSQL, or MySQL/MariaDB when ``engine`` says so)."""

    connector_id: str
    dsn: str  # decrypted; never logged
    engine: str = "postgresql"  # connectors.models.DatabaseEngine
    statement_timeout_ms: int = 5_000
    connect_timeout: float = 5.0
    max_rows: int = 200
    max_result_bytes: int = 200_000
    pool_max_size: int = 4
    allowed_private_hosts: tuple[str, ...] = ()
    allowed_tables: tuple[str, ...] = ()  # schemas and schema.table names; empty: all the account reads
    schema_samples: bool = False  # describe_table may show a few rows
    schema_cache_seconds: int = 300


@dataclass(frozen=True, slots=True)
class SqlActionSpec:
    """One SQL action: a parameterised template (``%(name)s`` placeholders) or free-form read-only SQL.

    With ``free_form=True`` the LLM supplies the statement in the ``sql`` argument; it must be one plain
    read statement (checked by the SQL parser and, independently, by a READ ONLY transaction).
    """

    name: str
    sql_template: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    is_write: bool = False
    free_form: bool = False
    schema_tool: str = ""  # "list_tables" or "describe_table": a schema tool instead of SQL


CallStatus = Literal["ok", "error"]


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """What an adapter call produced. ``content`` is what the LLM reads (a compact table or JSON text)."""

    status: CallStatus
    content: str
    http_status: int | None = None
    row_count: int | None = None
    latency_ms: float = 0.0
    request_bytes: int = 0
    response_bytes: int = 0
    error: str = ""  # short, secret-free explanation for the LLM and the call log
    truncated: bool = False
    # What a search returned, for the call log: one plain entry per hit (ids, names, scores; no text).
    retrieved: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class ConnectionWorks:
    """What "Test connection" says when the system answered and did not refuse the credentials;
    ``detail`` says what answered (short, secret-free)."""

    detail: str
    latency_ms: float = 0.0
    type: Literal["works"] = "works"


@dataclass(frozen=True, slots=True)
class ConnectionUnconfirmed:
    """The server answered, but its answer does not show that the connector's calls will work: an
    HTTP API's base URL answered 404 or 410 (a wrong base URL, or an API with nothing at its root)."""

    reason: str
    http_status: int | None = None
    latency_ms: float = 0.0
    type: Literal["unconfirmed"] = "unconfirmed"


@dataclass(frozen=True, slots=True)
class ConnectionFailed:
    """The system is not usable as configured: unreachable, blocked by the SSRF guard, credentials
    refused, an error answer; ``reason`` says which (short, secret-free)."""

    reason: str
    http_status: int | None = None
    latency_ms: float = 0.0
    type: Literal["failed"] = "failed"


ConnectionTestResult = ConnectionWorks | ConnectionUnconfirmed | ConnectionFailed
