"""The planner: one structured call on the smart model turns a goal into 2-6 steps with dependencies.

Validation policy: the planner's JSON is normalised (shape recovery, unique ids, dangling dependencies
pruned, unknown hints dropped), then checked: more than ``max_steps`` steps or a dependency cycle (Kahn's
algorithm) gets ONE retry that shows the model its plan and the problem; a second invalid plan raises
:class:`PlanValidationError`, as does a model that produces no usable JSON at all. A plan with fewer than
``min_steps`` steps is accepted: a goal too simple to split gains nothing from another model call.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import date
from typing import Any

from agents.engine.llm import LLM, ChatResponse, LLMError, Message, Usage
from agents.engine.metering import CallPurpose, call_purpose
from agents.engine.model_registry import FAST, ROLES, SMART, ModelRegistry
from agents.engine.plan import prompts
from agents.engine.plan.graph import json_array, steps_from_raw, topological_order
from agents.engine.plan.models import Plan, PlanStep, PlanValidationError
from agents.engine.structured import StructuredOutputError, structured_llm_call
from agents.engine.synthesis import cut
from agents.engine.tools import ToolRegistry

logger = logging.getLogger(__name__)

MIN_STEPS = 2
MAX_STEPS = 6
HISTORY_SUMMARY_CHARS = 6000
# What the summariser reads at most (the most recent part of a very long conversation).
HISTORY_INPUT_CHARS = 48000

PLAN_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "steps": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "task": {"type": "string"},
                    "dependencies": {"type": "array", "items": {"type": "string"}},
                    "tool_hint": {"type": ["string", "null"]},
                    "model_hint": {"type": ["string", "null"], "enum": [*ROLES, None]},
                },
                "required": ["id", "task", "dependencies"],
            },
        }
    },
    "required": ["steps"],
}


class Planner:
    """Plans a goal as steps with dependencies (see the module docstring for the validation policy)."""

    def __init__(
        self,
        registry: ModelRegistry,
        *,
        min_steps: int = MIN_STEPS,
        max_steps: int = MAX_STEPS,
        history_summary_chars: int = HISTORY_SUMMARY_CHARS,
        today: Callable[[], date] = date.today,
    ) -> None:
        self.registry = registry
        self.min_steps = min_steps
        self.max_steps = max_steps
        self.history_summary_chars = history_summary_chars
        self.today = today

    async def plan(
        self,
        goal: str,
        *,
        tools: ToolRegistry,
        history: Sequence[Message] = (),
        feedback: str | None = None,
        usage: Usage | None = None,
        round_number: int = 1,
        instructions: str = "",
    ) -> Plan:
        """A validated plan for ``goal``; ``feedback`` summarises earlier rounds when re-planning.

        Raises :class:`PlanValidationError` when no runnable plan comes out (see the module docstring).
        """
        usage = usage if usage is not None else Usage()
        parts = [prompts.PLANNER_GOAL.format(goal=goal)]
        if instructions.strip():
            parts.append(prompts.PLANNER_INSTRUCTIONS.format(instructions=instructions.strip()))
        if history:
            parts.append(await self._history(history, usage))
        if feedback:
            parts.append(prompts.PLANNER_FEEDBACK.format(feedback=feedback))
        system = prompts.PLANNER_SYSTEM.format(
            min_steps=self.min_steps,
            max_steps=self.max_steps,
            today=self.today().isoformat(),
            catalogue=tools.catalogue() or prompts.NO_TOOLS,
        )
        messages: list[Message] = [
            {"role": "system", "content": system},
            {"role": "user", "content": "\n\n".join(parts)},
        ]
        names = frozenset(tools.names())
        steps, raw = await self._ask(messages, names, usage)
        try:
            self._check(steps)
        except PlanValidationError as problem:
            logger.info("plan rejected (%s); asking once more", problem)
            messages += [
                {"role": "assistant", "content": json.dumps(raw, ensure_ascii=False, default=str)},
                {
                    "role": "user",
                    "content": prompts.PLANNER_RETRY.format(problem=problem, max_steps=self.max_steps),
                },
            ]
            steps, _raw = await self._ask(messages, names, usage)
            self._check(steps)
        logger.info("planned round %d: %d steps", round_number, len(steps))
        return Plan(goal=goal, steps=steps, round=round_number)

    def _check(self, steps: list[PlanStep]) -> None:
        if len(steps) > self.max_steps:
            raise PlanValidationError(f"it has {len(steps)} steps; at most {self.max_steps} are allowed")
        topological_order(steps)

    async def _ask(
        self, messages: list[Message], tool_names: frozenset[str], usage: Usage
    ) -> tuple[list[PlanStep], Any]:
        def parse(raw: dict[str, Any]) -> tuple[list[PlanStep], Any]:
            return steps_from_raw(raw, tool_names=tool_names), raw

        try:
            with call_purpose(CallPurpose.PLANNER):
                result = await structured_llm_call(
                    _ArraysAsSteps(self.registry.get(SMART)),
                    messages,
                    schema=PLAN_SCHEMA,
                    function_name="make_plan",
                    function_description="Return the plan: its steps and their dependencies.",
                    parse_fn=parse,
                    validate_schema=False,  # bare step objects and loose types are recovered by parse()
                )
        except StructuredOutputError as exc:
            raise PlanValidationError(f"the planner produced no usable plan ({exc})") from exc
        usage.add(result.usage)
        return result.value

    async def _history(self, history: Sequence[Message], usage: Usage) -> str:
        """The conversation for the planner: verbatim when short, else summarised by the fast model."""
        text = format_history(history)
        if len(text) <= self.history_summary_chars:
            return prompts.PLANNER_HISTORY.format(history=text)
        messages: list[Message] = [
            {
                "role": "system",
                "content": prompts.HISTORY_SUMMARY_SYSTEM.format(chars=self.history_summary_chars),
            },
            {"role": "user", "content": text[-HISTORY_INPUT_CHARS:]},
        ]
        try:
            with call_purpose(CallPurpose.PLANNER):
                response = await self.registry.get(FAST).chat(messages, temperature=0.0)
            usage.add(response.usage)
            summary = (response.content or "").strip()
        except LLMError as exc:
            logger.warning("history summary failed (%s); keeping the latest part", type(exc).__name__)
            summary = ""
        if not summary:
            return prompts.PLANNER_HISTORY.format(history=text[-self.history_summary_chars :])
        return prompts.PLANNER_HISTORY_SUMMARY.format(history=summary[: self.history_summary_chars])


def format_history(history: Sequence[Message]) -> str:
    """Earlier messages as ``role: text`` paragraphs (system prompts left out, tool results cut)."""
    lines = []
    for message in history:
        role = message.get("role")
        if role == "system":
            continue
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, default=str)
        if role == "tool":
            lines.append(f"tool result: {cut(text)}")
        elif text:
            lines.append(f"{role}: {text}")
        for call in message.get("tool_calls") or ():
            function = call.get("function", {})
            lines.append(f"{role} called {function.get('name', '?')}({cut(function.get('arguments', ''))})")
    return "\n\n".join(lines)


class _ArraysAsSteps:
    """The planner's model, with a reply that is a bare JSON array of steps read as ``{"steps": [...]}``.

    ``structured_llm_call`` only accepts objects, and would otherwise take the first step of the array.
    """

    def __init__(self, llm: LLM) -> None:
        self._llm = llm
        self.wrapped_llm = (
            llm  # what an endpoint refused is remembered on the model (agents.engine.abilities)
        )
        self.abilities = llm.abilities
        self.context_window = llm.context_window

    async def chat(self, messages: Sequence[Message], **kwargs: Any) -> ChatResponse:
        response = await self._llm.chat(messages, **kwargs)
        content = response.content
        array = json_array(content)
        if array is not None:
            content = json.dumps({"steps": array}, ensure_ascii=False)
        calls = tuple(
            dataclasses.replace(c, arguments=json.dumps({"steps": a}, ensure_ascii=False))
            if (a := json_array(c.arguments)) is not None
            else c
            for c in response.tool_calls
        )
        if array is None and calls == response.tool_calls:
            return response
        return dataclasses.replace(response, content=content, tool_calls=calls)

    def stream_chat(self, messages: Sequence[Message], **kwargs: Any) -> AsyncIterator[str]:
        return self._llm.stream_chat(messages, **kwargs)


__all__ = ["PLAN_SCHEMA", "Planner", "format_history"]
