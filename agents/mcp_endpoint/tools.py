"""An organisation's exposed agents as MCP tools: a stable tool name per agent, its description and the
input every agent tool takes (the question, and optionally the conversation to continue and files to
read)."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

from agents.mcp_endpoint.attachments import attachments_input_schema
from agents.models import Agent

TOOL_NAME_CHARS = 64
_NOT_NAME = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True, slots=True)
class AgentTool:
    """One exposed agent as an MCP tool."""

    name: str
    agent_id: uuid.UUID
    agent_name: str
    description: str


def tool_name_for(agent_name: str) -> str:
    """``Purchasing assistant`` → ``purchasing_assistant`` (MCP tool names: letters, digits, ``_``)."""
    name = _NOT_NAME.sub("_", agent_name.lower()).strip("_")
    return (name or "agent")[:TOOL_NAME_CHARS]


def agent_tools_for_org(*, organization_id: int) -> list[AgentTool]:
    """The active agents the organisation exposes over MCP, by name (sync: database).

    Two agents whose names give the same tool name get the agent id's head as a suffix, so each name
    stays unique and stable.
    """
    agents = list(
        Agent.objects.filter(organization_id=organization_id, active=True, exposed_over_mcp=True)
        .order_by("name")
        .values_list("pk", "name", "description")
    )
    seen: dict[str, int] = {}
    for _pk, name, _description in agents:
        base = tool_name_for(name)
        seen[base] = seen.get(base, 0) + 1
    tools = []
    for pk, name, description in agents:
        tool_name = tool_name_for(name)
        if seen[tool_name] > 1:
            tool_name = f"{tool_name[: TOOL_NAME_CHARS - 9]}_{pk.hex[:8]}"
        tools.append(AgentTool(tool_name, pk, name, _tool_description(name, description)))
    return tools


def agent_tool_named(*, organization_id: int, name: str) -> AgentTool | None:
    """The organisation's exposed agent behind tool ``name``, if any (sync: database)."""
    return next(
        (tool for tool in agent_tools_for_org(organization_id=organization_id) if tool.name == name), None
    )


def _tool_description(agent_name: str, description: str) -> str:
    # "Purchasing assistant" reads "the purchasing assistant"; "ERP bot" keeps its capitals.
    shown = agent_name if agent_name[:2].isupper() else agent_name[:1].lower() + agent_name[1:]
    head = _("Ask the %(agent)s.") % {"agent": shown}
    return f"{head} {description}".strip()


def agent_tool_input_schema() -> dict[str, Any]:
    """What every agent tool takes."""
    return {
        "type": "object",
        "properties": {
            "question": {"type": "string", "description": _("The question or request for the agent.")},
            "conversation_id": {
                "type": "string",
                "description": _(
                    "Optional: the conversation_id of an earlier answer, to continue that conversation."
                ),
            },
            "attachments": attachments_input_schema(),
        },
        "required": ["question"],
        "additionalProperties": False,
    }


def agent_tool_output_schema() -> dict[str, Any]:
    """What every agent tool answers (as structured content, beside the answer's text)."""
    return {
        "type": "object",
        "properties": {
            "answer": {"type": "string"},
            "conversation_id": {"type": "string"},
            "run_id": {"type": "string"},
            "status": {"type": "string", "enum": ["done", "failed", "cancelled"]},
            "citations": {
                "type": "array",
                "description": "The sources the answer's [n] marks cite (knowledge-base passages).",
                "items": {
                    "type": "object",
                    "properties": {
                        "number": {"type": "integer"},
                        "title": {"type": "string"},
                        "location": {"type": "string"},
                        "preview": {"type": "string"},
                        "url": {"type": "string"},
                        "source_id": {"type": "string"},
                    },
                    "required": ["number", "title"],
                },
            },
        },
        "required": ["answer", "conversation_id", "run_id", "status"],
    }
