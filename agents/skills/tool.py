"""A run's skill-reading tool, ``skills__read_skill``, judged by the guard rails as any connector's.

The tool is the organisation's skill library connector's one action (:mod:`agents.skills.library`), so
the run's guard-rail catalogue, built from the same connector actions, finds it: read-only mode allows
it (a read), and rate limits, budgets and approval policies of its connector apply. The audit hook
records every call before it runs, with the skill's name (and file) as its arguments and, from
:attr:`CallOutcome.retrieved`, the version read (never the text). A run has the tool only when its agent
is allowed an active skill, and each call checks again that it still is.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from asgiref.sync import sync_to_async

from agents.engine.run_context import RunContext
from agents.engine.tool_context import ToolCallContext
from agents.engine.tools import Tool, ToolResult
from agents.skills.selectors import AgentSkills, NoSuchFile, NoSuchSkill, SkillText, skill_read
from connectors.adapter_types import CallOutcome
from connectors.models import ConnectorAction
from connectors.selectors import RunActionsSource, run_connector_actions
from connectors.skills.kind import READ_SKILL_ACTION, READ_TIMEOUT_SECONDS
from connectors.tools import ConnectorToolResult, tool_description_for, tool_name_for

__all__ = ["SkillReadTool", "skills_tool_name", "skills_tools_for_run"]


def skills_tool_name(skills: AgentSkills) -> str:
    """``<skill library connector>__read_skill``."""
    return tool_name_for(skills.connector_name, READ_SKILL_ACTION)


class SkillReadTool(Tool):
    """Reading one of the run's agent's skills (its body, or one of its files)."""

    pinned = True  # the system prompt names it: tool selection keeps it

    def __init__(self, action: ConnectorAction, context: RunContext) -> None:
        self.name = tool_name_for(action.connector.name, READ_SKILL_ACTION)
        self.description = tool_description_for(action)
        self.parameters = action.parameters
        self.timeout = READ_TIMEOUT_SECONDS
        self.context = context

    async def execute(self, ctx: ToolCallContext, /, **kwargs: Any) -> ToolResult:
        started = time.perf_counter()
        name = str(kwargs.get("name") or "").strip()
        file = str(kwargs.get("file") or "").strip()
        if not name:
            return _error("give the name of a skill, as your instructions list it", started)
        org_id = self.context.org_id
        if org_id is None or not self.context.agent_id:
            return _error(f'No such skill: "{name}".', started)
        read = await sync_to_async(skill_read)(
            organization_id=org_id, agent_id=self.context.agent_id, name=name, file=file
        )
        if isinstance(read, NoSuchSkill):
            readable = ", ".join(read.readable) or "none"
            return _error(f'No such skill: "{name}". The skills you may read: {readable}.', started)
        if isinstance(read, NoSuchFile):
            files = ", ".join(read.files) or "none"
            return _error(f'The skill "{read.name}" has no file "{file}". Its files: {files}.', started)
        content = _text(read)
        call = CallOutcome(
            status="ok",
            content=content,
            row_count=1,
            latency_ms=(time.perf_counter() - started) * 1000,
            request_bytes=len(name.encode()) + len(file.encode()),
            response_bytes=len(content.encode()),
            retrieved=({"skill": read.name, "version": read.version, "file": read.file},),
        )
        return ConnectorToolResult(content=content, call=call)


def _text(read: SkillText) -> str:
    """What the model reads: the skill's body (with the list of its files), or the file asked for."""
    if read.file:
        return f'File "{read.file}" of the skill "{read.name}" (version {read.version}):\n\n{read.text}'
    text = f'Skill "{read.name}" (version {read.version}):\n\n{read.text.strip()}'
    if read.files:
        text += "\n\nFiles of this skill (read one with `file`): " + ", ".join(read.files)
    return text


def _error(message: str, started: float) -> ToolResult:
    call = CallOutcome(
        status="error", content="", error=message, latency_ms=(time.perf_counter() - started) * 1000
    )
    return ConnectorToolResult(content=f"Error: {message}", is_error=True, error=message, call=call)


class _SkillsRun(RunActionsSource, Protocol):
    """What :func:`skills_tools_for_run` needs of a run (``agents.runtime.RunBlueprint`` has it): its
    actions' source, and its agent's skills."""

    @property
    def skills(self) -> AgentSkills | None: ...


def skills_tools_for_run(run: _SkillsRun) -> list[Tool]:
    """The run's skill tool, when its agent has skills and the skill library's action is on (sync)."""
    skills = run.skills
    if skills is None or run.context.org_id is None:
        return []
    action = next(
        (
            action
            for action in run_connector_actions(run)
            if str(action.connector_id) == skills.connector_id and action.name == READ_SKILL_ACTION
        ),
        None,
    )
    return [SkillReadTool(action, run.context)] if action is not None else []
