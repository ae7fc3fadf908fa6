"""Plan mode for the offline demo model: a tiny, honest plan, its verdict and its answer.

The demo model does not reason, so its plan is always the same two steps, in the language of the goal:
look up what the question needs with the tool whose name best matches it, then summarise what that step
found. The verdict says the goal was reached when the look-up produced a result, and the routing choice
for ``auto`` agents is a word heuristic. Every text says it comes from the offline demo model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict

from agents.engine.llm import Message
from agents.engine.plan import prompts

LABEL_EN = "Offline demo model"
LABEL_ZH = "离线演示模型"

_CJK = re.compile(r"[\u4e00-\u9fff]")
_CATALOGUE_LINE = re.compile(r"^\s*-\s*([A-Za-z0-9_\-.]+)\s*[:\-—(]?(.*)$")
# The headers the planner's user message may have after the goal.
_AFTER_GOAL = tuple(
    "\n\n" + template.split("{", 1)[0]
    for template in (prompts.PLANNER_INSTRUCTIONS, prompts.PLANNER_HISTORY, prompts.PLANNER_FEEDBACK)
)
_GOAL_HEAD = prompts.PLANNER_GOAL.split("{", 1)[0]
_STEP_HEAD = prompts.STEP_TASK.split("{", 1)[0]
_STEP_GOAL_END = prompts.STEP_TASK.split("{goal}", 1)[1].split("{", 1)[0]
_TOOL_HINT = prompts.STEP_TOOL_HINT.split("{", 1)[0]
_DEPENDENCIES = prompts.STEP_DEPENDENCIES
_SYNTHESIS_STEPS = "\n\n" + prompts.SYNTHESIS_USER.split("{goal}", 1)[1].split("{", 1)[0].strip() + "\n"
_SYNTHESIS_DRAFT = "\n\n" + prompts.SYNTHESIS_USER.split("{steps}", 1)[1].split("{", 1)[0].strip()
_MULTI_PART = re.compile(
    r"\b(and|compare|versus|vs|both|each|report)\b|和|以及|对比|比较|分别|报告", re.IGNORECASE
)


def is_chinese(text: str) -> bool:
    return bool(_CJK.search(text))


def planner_goal(messages: Sequence[Message]) -> str:
    """The goal in the planner's prompt (the text after ``Goal:`` up to the next section)."""
    for message in messages:
        content = str(message.get("content") or "")
        if message.get("role") == "user" and content.startswith(_GOAL_HEAD):
            goal = content[len(_GOAL_HEAD) :]
            for marker in _AFTER_GOAL:
                goal = goal.split(marker, 1)[0]
            return goal.strip()
    return ""


def step_goal(question: str) -> str | None:
    """The overall goal when ``question`` is a plan step's task, else ``None``."""
    if not question.startswith(_STEP_HEAD):
        return None
    return question[len(_STEP_HEAD) :].split(_STEP_GOAL_END, 1)[0].strip()


def suggested_tool(question: str) -> str | None:
    """The tool a plan step's task suggests (its ``Suggested tool:`` line), if any."""
    if not question.startswith(_STEP_HEAD) or _TOOL_HINT not in question:
        return None
    return question.split(_TOOL_HINT, 1)[1].split("\n", 1)[0].strip() or None


def _catalogue(messages: Sequence[Message]) -> list[tuple[str, str]]:
    tools = []
    for message in messages:
        if message.get("role") != "system":
            continue
        for line in str(message.get("content") or "").splitlines():
            match = _CATALOGUE_LINE.match(line)
            if match:
                tools.append((match.group(1), match.group(2)))
    return tools


_PART_SPLIT = re.compile(
    r"\s*(?:,?\s+\b(?:and|as well as|plus)\b\s+|[,;]\s+|和|以及|及|、|；|，)\s*", re.IGNORECASE
)
_LOOKUP_EN = "Look up the data this question needs: "
_LOOKUP_ZH = "查询回答这个问题所需的数据："


ToolPicker = Callable[[str, Sequence[tuple[str, str]]], str | None]


class _PlanStep(TypedDict):
    """One step of the demo plan, as the planner's JSON has it."""

    id: str
    task: str
    dependencies: list[str]
    tool_hint: str | None
    model_hint: str


def plan_value(messages: Sequence[Message], pick_tool: ToolPicker) -> dict[str, Any]:
    """One look-up per part of the goal ("the drafts and the payments": two), each with the tool that
    best matches it, then a step that summarises what they found."""
    goal = planner_goal(messages)
    catalogue = _catalogue(messages)
    zh = is_chinese(goal)
    parts = [part.strip(" .?!。？！") for part in _PART_SPLIT.split(goal)]
    looked_up = [(part, pick_tool(part, catalogue)) for part in parts if part]
    looked_up = [(part, tool) for part, tool in looked_up if tool is not None]
    if len(looked_up) < 2:  # one thing to look up: the whole goal is its task
        looked_up = [(goal, pick_tool(goal, catalogue))]
    prefix = _LOOKUP_ZH if zh else _LOOKUP_EN
    steps: list[_PlanStep] = [
        {"id": str(n), "task": prefix + part, "dependencies": [], "tool_hint": tool, "model_hint": "fast"}
        for n, (part, tool) in enumerate(looked_up, start=1)
    ]
    ids = [step["id"] for step in steps]
    if zh:
        summary = f"整理第 {'、'.join(ids)} 步查到的结果，回答这个问题。"
    elif len(ids) == 1:
        summary = "Summarise what step 1 found to answer the question."
    else:
        summary = f"Summarise what steps {', '.join(ids[:-1])} and {ids[-1]} found to answer the question."
    steps.append(
        {
            "id": str(len(steps) + 1),
            "task": summary,
            "dependencies": ids,
            "tool_hint": None,
            "model_hint": "general",
        }
    )
    return {"steps": steps}


def step_subject(question: str) -> str | None:
    """What a plan step's look-up is about (its part of the goal), or ``None`` for other prompts."""
    goal = step_goal(question)
    if goal is None:
        return None
    task = question.split(_STEP_GOAL_END, 1)[-1].split("):\n", 1)[-1].split("\n", 1)[0]
    for prefix in (_LOOKUP_EN, _LOOKUP_ZH):
        if task.startswith(prefix):
            return task[len(prefix) :].strip() or goal
    return goal


def analysis_value(messages: Sequence[Message]) -> dict[str, Any]:
    """Achieved when some step finished with a result; the final answer is left to the synthesis."""
    text = "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "user")
    finished = "[done]" in text
    zh = is_chinese(text)
    if finished:
        reasoning = f"（{LABEL_ZH}）计划的步骤已完成。" if zh else f"({LABEL_EN}) The plan's steps finished."
    else:
        reasoning = f"（{LABEL_ZH}）没有步骤得到结果。" if zh else f"({LABEL_EN}) No step produced a result."
    return {
        "achieved": finished,
        "confidence": 1.0 if finished else 0.0,
        "reasoning": reasoning,
        "final_answer": "",
    }


def route_value(question: str) -> dict[str, Any]:
    """Plan mode for questions that name several things at once, ReAct mode otherwise."""
    several = bool(_MULTI_PART.search(question))
    label = LABEL_ZH if is_chinese(question) else LABEL_EN
    return {"mode": "plan" if several else "react", "reason": f"({label}) word heuristic"}


_RESTATED_EN = "What the earlier steps found:"
_RESTATED_ZH = "前面步骤的结果："


def dependency_answer(question: str) -> str | None:
    """A plan step that builds on earlier steps: their results, labelled (no tool call)."""
    if not question.startswith(_STEP_HEAD) or _DEPENDENCIES not in question:
        return None
    results = question.split(_DEPENDENCIES, 1)[1].split("\n\n" + prompts.STEP_CLOSING, 1)[0].strip()
    goal = step_goal(question) or ""
    if is_chinese(goal):
        return f"（{LABEL_ZH}）{_RESTATED_ZH}\n\n{results}"
    return f"({LABEL_EN}) {_RESTATED_EN}\n\n{results}"


def synthesis_answer(text: str) -> str | None:
    """The streamed answer of a plan run: each step's result under its task, labelled."""
    if _SYNTHESIS_STEPS not in text:
        return None
    question = text.split("\n", 1)[-1].split(_SYNTHESIS_STEPS, 1)[0].strip()
    body = text.split(_SYNTHESIS_STEPS, 1)[1].split(_SYNTHESIS_DRAFT, 1)[0].strip()
    # The summarising step (the last) only restates the look-up: show each result once.
    restated = max(body.find(_RESTATED_EN), body.find(_RESTATED_ZH))
    cut = body.rfind("\n\n### ", 0, restated) if restated > 0 else -1
    if cut > 0:
        body = body[:cut]
    if is_chinese(question):
        return f"**{LABEL_ZH}**：以下是计划各步骤的结果。\n\n{body}"
    return f"**{LABEL_EN}**: here is what the steps of the plan found.\n\n{body}"


def structured_plan_value(
    properties: Mapping[str, Any],
    messages: Sequence[Message],
    question: str,
    pick_tool: ToolPicker,
) -> dict[str, Any] | None:
    """The demo's value for plan mode's structured calls (planner, analyser, router), else ``None``."""
    if "steps" in properties:
        return plan_value(messages, pick_tool)
    if "achieved" in properties:
        return analysis_value(messages)
    if "mode" in properties:
        return route_value(question)
    return None
