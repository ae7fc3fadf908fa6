"""The skill-library kind of connector (:class:`~connectors.kinds.ConnectorKindAdapter`).

An organisation's skills (``agents.skills``) have one connector of this kind, named ``skills`` and made
with the first skill, whose one action, ``read_skill``, is the tool a run reads a skill with. The
connector is how the guard rails see that tool: read-only mode, rate limits, budgets, approval policies
and the call log name it as they name any connector. It reaches no system, so it has no settings, and
its tool is built by the agents app, which holds the skills (``tools_from_connectors`` is false):
:meth:`SkillsKind.call` is never how a run reads a skill.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from connectors.adapter_types import CallOutcome, ConnectionTestResult, ConnectionWorks
from connectors.kinds import ActionCalled, CallFacts, ToolText
from connectors.models import Connector, ConnectorAction, ConnectorKind

READ_SKILL_ACTION = "read_skill"
READ_TIMEOUT_SECONDS = 10.0


class SkillsKind:
    """Reading one of the organisation's skills: a read, made by the platform itself."""

    kind = ConnectorKind.SKILLS.value
    settings: tuple[str, ...] = ()
    call_log_method = ""
    tools_from_connectors = False

    def connector_errors(self, connector: Connector) -> dict[str, Any]:
        """Nothing to set (the skills are the organisation's own rows)."""
        return {}

    def outbound_errors(
        self, connector: Connector, *, allowed_private_hosts: list[str], found: Set[str]
    ) -> dict[str, ValidationError]:
        """It reaches nothing outside the platform."""
        return {}

    def connector_saved(self, connector: Connector) -> None:
        return None

    def action_errors(self, action: ConnectorAction) -> dict[str, Any]:
        if action.name != READ_SKILL_ACTION:
            return {"name": _("The skill library has one action, “read_skill”.")}
        if (
            action.method
            or action.path_template
            or action.sql_template
            or action.free_form
            or action.mcp_tool
        ):
            return {"method": _("Reading a skill has no HTTP method, path, SQL or MCP tool.")}
        return {}

    def action_is_write(self, action: ConnectorAction) -> bool:
        return False

    def call_write_reason(self, action: CallFacts, arguments: Mapping[str, Any]) -> str | None:
        """Reading a skill changes nothing; read-only mode allows it."""
        return None

    def tool_text(self, action: ConnectorAction) -> ToolText:
        return ToolText(target="skill library")

    def tool_timeout(self, action: ConnectorAction) -> float:
        return READ_TIMEOUT_SECONDS

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
        """Not how a run reads a skill (the agents app builds the tool); answers an error if ever reached."""
        return ActionCalled(CallOutcome(status="error", content="", error="a skill is read by its own tool"))

    async def test_connection(self, config: Any, secrets: tuple[str, ...]) -> ConnectionTestResult:
        return ConnectionWorks(detail="the skill library is part of the platform: nothing to reach")
