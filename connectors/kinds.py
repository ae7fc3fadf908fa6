"""The one protocol every kind of connector implements, and the registry that finds a kind's adapter.

Each kind (an HTTP API, a SQL database, an MCP server) validates and describes itself behind
:class:`ConnectorKindAdapter`, as Django's database backends do behind their wrapper class: the models'
``clean()``, the tools and the services ask the connector's kind instead of switching on it. Each kind's
package holds its one implementation (``connectors/http/kind.py``, ``connectors/sql/kind.py``,
``connectors/mcp/kind.py``), which :class:`~connectors.apps.ConnectorsConfig` registers when the app is
ready: the kinds' packages build on the models, so the models reach them only through this registry.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from django.core.exceptions import ValidationError

from agents.engine.tools import Artifact
from connectors.adapter_types import CallOutcome, ConnectionTestResult, ConnectionWorks
from connectors.scrub import scrub

if TYPE_CHECKING:
    from connectors.models import Connector, ConnectorAction


@dataclass(frozen=True, slots=True)
class ToolText:
    """What a tool's description says of its action beyond the action's own description."""

    target: str  # where a call goes: "GET /orders/{id}", "MCP tool lookup_order", "SQL"
    summary: str = ""  # the first line when the action has no description ("": its name, capitalised)
    notes: tuple[str, ...] = ()  # lines after the system's description


@dataclass(frozen=True, slots=True)
class ActionCalled:
    """One call's outcome and what it shows in the tool card."""

    outcome: CallOutcome
    artifacts: tuple[Artifact, ...] = ()


class CallFacts(Protocol):
    """What read-only mode knows of a call's action (``hooks.catalog.ActionInfo`` has these)."""

    @property
    def is_write(self) -> bool: ...
    @property
    def free_form(self) -> bool: ...
    @property
    def sql_template(self) -> str: ...
    @property
    def engine(self) -> str: ...
    @property
    def schema_tool(self) -> str: ...
    @property
    def mcp_read_confirmed(self) -> bool: ...


class ConnectorKindAdapter(Protocol):
    """What one kind of connector does for the rest of the app.

    ``config`` and ``spec`` are the kind's own plain values (``connectors.adapter_types``,
    :class:`~connectors.mcp.config.McpConfig`): the adapter makes them and is the only one to read them.
    """

    kind: str  # the ConnectorKind value
    settings: tuple[str, ...]  # the connector fields this kind uses besides its identity (connectors.fields)
    call_log_method: str  # the protocol method a call log row names ("tools/call" for MCP), or ""
    # The arguments a call log row keeps only the length of (a memory's text: a person's own words, which
    # the audit trail must not outlive).
    private_arguments: frozenset[str]
    # Whether connectors.tools builds the run's tools of this kind (False: a knowledge base's search,
    # which the agents app builds from the documents it holds; the guard rails judge it all the same).
    tools_from_connectors: bool

    def connector_errors(self, connector: Connector) -> dict[str, Any]:
        """The connector's settings this kind needs and does not have, by field (messages, not raised)."""
        ...

    def outbound_errors(
        self, connector: Connector, *, allowed_private_hosts: list[str], found: Set[str]
    ) -> dict[str, ValidationError]:
        """The SSRF guard's verdict on what the connector reaches, by field; ``found`` names the fields
        already in error (a target that could not be read is not checked)."""
        ...

    def connector_saved(self, connector: Connector) -> None:
        """What a saved connector of this kind gets besides its row (a database's schema tools)."""
        ...

    def action_errors(self, action: ConnectorAction) -> dict[str, Any]:
        """What is wrong with an action of this kind's connector, by field."""
        ...

    def action_is_write(self, action: ConnectorAction) -> bool:
        """Whether the action writes, judged from what it does (unless an admin overrode it)."""
        ...

    def call_write_reason(self, action: CallFacts, arguments: Mapping[str, Any]) -> str | None:
        """Why this call of ``action`` with the model's ``arguments`` could change data, or ``None`` when
        it is certainly a read (read-only mode blocks the former)."""
        ...

    def tool_text(self, action: ConnectorAction) -> ToolText:
        """What the action's tool description says of where it goes."""
        ...

    def tool_timeout(self, action: ConnectorAction) -> float:
        """Seconds the engine lets one call of the action's tool run."""
        ...

    def call_config(self, connector: Connector) -> Any:
        """The plain config a call or a connection test needs (decrypts the connector's credentials)."""
        ...

    def action_spec(self, action: ConnectorAction) -> Any:
        """The plain description of the action a call needs."""
        ...

    async def call(
        self,
        config: Any,
        spec: Any,
        arguments: Mapping[str, Any],
        *,
        idempotency_key: str | None,
        is_write: bool,
    ) -> ActionCalled:
        """Call the action once with the model's arguments."""
        ...

    async def test_connection(self, config: Any, secrets: tuple[str, ...]) -> ConnectionTestResult:
        """Whether the connector's system answers, ``secrets`` scrubbed from the answer; changes nothing."""
        ...


_ADAPTERS: dict[str, ConnectorKindAdapter] = {}


def adapter_register(adapter: ConnectorKindAdapter) -> None:
    """Make ``adapter`` the one of its kind (the app does this once, when it is ready)."""
    _ADAPTERS[adapter.kind] = adapter


def adapter_for(kind: str) -> ConnectorKindAdapter:
    """The adapter of the connector kind ``kind`` (``LookupError`` for a kind no package registered)."""
    try:
        return _ADAPTERS[kind]
    except KeyError:
        raise LookupError(f"no adapter for the connector kind {kind!r}") from None


def adapter_list() -> tuple[ConnectorKindAdapter, ...]:
    """Every registered adapter, in the order they were registered."""
    return tuple(_ADAPTERS.values())


def connection_result_scrubbed(
    result: ConnectionTestResult, secrets: tuple[str, ...]
) -> ConnectionTestResult:
    """A connection test's answer without the connector's secrets."""
    if isinstance(result, ConnectionWorks):
        return replace(result, detail=scrub(result.detail, secrets))
    return replace(result, reason=scrub(result.reason, secrets))
