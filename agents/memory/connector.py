"""The organisation's memory connector: the guard rails' identity of the ``remember`` tool.

One connector of the memory kind per organisation (``connectors.memory.kind``), named ``memory`` (or
``memory_2``... when that name is taken), made with its one action, ``remember``, when an agent's memory
is first switched on. Its administrators can rate-limit that tool, hold it for approval or switch it off
(agents then still recall memories, but write none), as any connector's; the call log records every call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agents.memory.limits import TEXT_MAX_CHARS
from connectors.memory.kind import REMEMBER_ACTION, MemoryKind
from connectors.models import Connector, ConnectorKind
from connectors.platform_kinds import platform_connector
from connectors.tools import tool_name_for
from platform_core.models import Organization

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from agents.models import Agent

__all__ = [
    "MEMORY_CONNECTOR_NAME",
    "MemoryTool",
    "agent_memory_ready",
    "memory_connector",
    "memory_tool_of_org",
]

MEMORY_CONNECTOR_NAME = "memory"
REMEMBER_DESCRIPTION = (
    "Keep a fact or a preference of the person you are talking with, for your later conversations with "
    "them: what they ask you to remember, or what will clearly matter again (their role, their team, how "
    "they like answers). One short sentence in their language, about them; never secrets such as "
    "passwords, never what is only true for this task."
)
REMEMBER_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {
            "type": "string",
            "maxLength": TEXT_MAX_CHARS,
            "description": "The fact or preference, as one short sentence about the person.",
        },
    },
    "required": ["text"],
    "additionalProperties": False,
}


@dataclass(frozen=True, slots=True)
class MemoryTool:
    """The organisation's memory connector, active with its action on: the ``remember`` tool's identity."""

    connector_id: str
    connector_name: str

    @property
    def tool_name(self) -> str:
        return tool_name_for(self.connector_name, REMEMBER_ACTION)


def memory_connector(*, organization: Organization, actor: User | None) -> Connector:
    """The organisation's memory connector, made (active, with its action) the first time."""
    return platform_connector(
        organization=organization,
        adapter=MemoryKind(),
        name=MEMORY_CONNECTOR_NAME,
        description="What each person asked the agents to remember about them.",
        action_description=REMEMBER_DESCRIPTION,
        parameters=REMEMBER_PARAMETERS,
        actor=actor,
    )


def agent_memory_ready(agent: Agent, *, actor: User | None) -> None:
    """Make the organisation's memory connector when ``agent``'s memory is on (after the agent's save)."""
    if agent.memory:
        memory_connector(organization=Organization.objects.get(pk=agent.organization_id), actor=actor)


def memory_tool_of_org(organization_id: int) -> MemoryTool | None:
    """The organisation's memory connector when it and its ``remember`` action are on (sync: one query)."""
    found = (
        Connector.objects.for_org(organization_id)
        .filter(
            kind=ConnectorKind.MEMORY,
            is_active=True,
            actions__name=REMEMBER_ACTION,
            actions__is_active=True,
        )
        .values_list("pk", "name")
        .first()
    )
    return MemoryTool(connector_id=str(found[0]), connector_name=found[1]) if found else None
