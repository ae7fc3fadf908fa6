"""A run's ``memory__remember`` tool, judged by the guard rails as any connector's.

The tool is the organisation's memory connector's one action (:mod:`agents.memory.connector`), so the
run's guard-rail catalogue, built from the same connector actions, finds it: rate limits, budgets and
approval policies of its connector apply, and the audit hook records every call before it runs. A run has
the tool only when its agent's memory is on; the memory is its person's, in its organisation, whatever
the model asks.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Protocol

from asgiref.sync import sync_to_async

from agents.engine.run_context import RunContext
from agents.engine.tool_context import ToolCallContext
from agents.engine.tools import Tool, ToolResult
from agents.memory.connector import MemoryTool
from agents.memory.models import MemoryOrigin
from agents.memory.services import MemoryRefused, memory_create
from connectors.adapter_types import CallOutcome
from connectors.memory.kind import REMEMBER_ACTION, REMEMBER_TIMEOUT_SECONDS
from connectors.models import ConnectorAction
from connectors.selectors import RunActionsSource, run_connector_actions
from connectors.tools import ConnectorToolResult, tool_description_for, tool_name_for

__all__ = ["RememberTool", "memory_tools_for_run"]


class RememberTool(Tool):
    """Keeping one fact or preference of the run's person."""

    pinned = True  # the system prompt names it: tool selection keeps it

    def __init__(self, action: ConnectorAction, context: RunContext) -> None:
        self.name = tool_name_for(action.connector.name, REMEMBER_ACTION)
        self.description = tool_description_for(action)
        self.parameters = action.parameters
        self.timeout = REMEMBER_TIMEOUT_SECONDS
        self.context = context

    async def execute(self, ctx: ToolCallContext, /, **kwargs: Any) -> ToolResult:
        started = time.perf_counter()
        text = str(kwargs.get("text") or "").strip()
        context = self.context
        if context.org_id is None or context.user_id is None:
            return _error("there is no person to remember this for", started)
        saved = await sync_to_async(memory_create)(
            organization_id=context.org_id,
            user_id=context.user_id,
            text=text,
            origin=MemoryOrigin.AGENT,
            agent_id=_uuid_or_none(context.agent_id),
            conversation_id=_uuid_or_none(context.conversation_id),
        )
        if isinstance(saved, MemoryRefused):
            return _error(saved.reason, started)
        content = "Remembered." if saved.created else "Already remembered: nothing new to keep."
        call = CallOutcome(
            status="ok",
            content=content,
            row_count=1 if saved.created else 0,
            latency_ms=(time.perf_counter() - started) * 1000,
            request_bytes=len(text.encode()),
            response_bytes=len(content.encode()),
            retrieved=({"memory": str(saved.memory.pk), "created": saved.created},),
        )
        return ConnectorToolResult(content=content, call=call)


def _uuid_or_none(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value) if value else None
    except ValueError:
        return None


def _error(message: str, started: float) -> ToolResult:
    call = CallOutcome(
        status="error", content="", error=message, latency_ms=(time.perf_counter() - started) * 1000
    )
    return ConnectorToolResult(content=f"Error: {message}", is_error=True, error=message, call=call)


class _MemoryRun(RunActionsSource, Protocol):
    """What :func:`memory_tools_for_run` needs of a run (``agents.runtime.RunBlueprint`` has it): its
    actions' source, and its memory tool."""

    @property
    def memory_tool(self) -> MemoryTool | None: ...


def memory_tools_for_run(run: _MemoryRun) -> list[Tool]:
    """The run's ``remember`` tool, when its agent's memory is on and the memory's action is (sync)."""
    found = run.memory_tool
    if found is None or run.context.org_id is None:
        return []
    action = next(
        (
            action
            for action in run_connector_actions(run)
            if str(action.connector_id) == found.connector_id and action.name == REMEMBER_ACTION
        ),
        None,
    )
    return [RememberTool(action, run.context)] if action is not None else []
