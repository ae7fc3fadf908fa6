"""The knowledge-base kind of connector (:class:`~connectors.kinds.ConnectorKindAdapter`).

A knowledge base (``agents.knowledge``) owns one connector of this kind, made and renamed with it, whose
one action, ``search``, is the knowledge base's search tool. The connector is how the guard rails see
the tool: read-only mode, rate limits, budgets, approval policies and the call log name it as they name
any connector. It reaches no system, so it has no settings, and its tool is built by the agents app,
which holds the documents (``tools_from_connectors`` is false): :meth:`KnowledgeKind.call` is never how
a run searches.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from connectors.adapter_types import CallOutcome, ConnectionTestResult, ConnectionWorks
from connectors.kinds import ActionCalled, CallFacts, ToolText
from connectors.models import Connector, ConnectorAction, ConnectorKind

SEARCH_ACTION = "search"
SEARCH_TIMEOUT_SECONDS = 30.0


class KnowledgeKind:
    """A knowledge base's search: a read, made by the platform itself."""

    kind = ConnectorKind.KNOWLEDGE.value
    settings: tuple[str, ...] = ()
    call_log_method = ""
    tools_from_connectors = False

    def connector_errors(self, connector: Connector) -> dict[str, Any]:
        """Nothing to set (its knowledge base holds the documents and the embedding endpoint)."""
        return {}

    def outbound_errors(
        self, connector: Connector, *, allowed_private_hosts: list[str], found: Set[str]
    ) -> dict[str, ValidationError]:
        """It reaches nothing outside the platform."""
        return {}

    def connector_saved(self, connector: Connector) -> None:
        return None

    def action_errors(self, action: ConnectorAction) -> dict[str, Any]:
        if action.name != SEARCH_ACTION:
            return {"name": _("A knowledge base has one action, “search”.")}
        if (
            action.method
            or action.path_template
            or action.sql_template
            or action.free_form
            or action.mcp_tool
        ):
            return {"method": _("A knowledge base's search has no HTTP method, path, SQL or MCP tool.")}
        return {}

    def action_is_write(self, action: ConnectorAction) -> bool:
        return False

    def call_write_reason(self, action: CallFacts, arguments: Mapping[str, Any]) -> str | None:
        """A search reads; read-only mode allows it."""
        return None

    def tool_text(self, action: ConnectorAction) -> ToolText:
        return ToolText(target="knowledge base search")

    def tool_timeout(self, action: ConnectorAction) -> float:
        return SEARCH_TIMEOUT_SECONDS

    def call_config(self, connector: Connector) -> None:
        return None

    def action_spec(self, action: ConnectorAction) -> None:
        return None

    async def call(
        self,
        config: Any,
        spec: Any,
        arguments: Mapping[str, Any],
        *,
        idempotency_key: str | None,
        is_write: bool,
    ) -> ActionCalled:
        """Not how a run searches (the agents app builds the tool); answers an error if ever reached."""
        return ActionCalled(
            CallOutcome(status="error", content="", error="a knowledge base is searched by its own tool")
        )

    async def test_connection(self, config: Any, secrets: tuple[str, ...]) -> ConnectionTestResult:
        return ConnectionWorks(detail="a knowledge base is part of the platform: nothing to reach")
