"""Turning the planner's JSON into runnable steps: shape recovery, ids, dependencies, cycle check."""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from agents.engine.model_registry import normalise_role
from agents.engine.plan.models import PlanStep, PlanValidationError, id_order
from agents.engine.strict_json import StrictJSONError, loads_strict

logger = logging.getLogger(__name__)

MAX_ID_CHARS = 40
_STEP_LISTS = ("steps", "plan", "tasks", "dag")
_TASK_KEYS = ("task", "description", "title", "name")
_SPACES = re.compile(r"\s+")
_FENCED_ARRAY = re.compile(r"```[a-zA-Z0-9]*\s*(\[.*?\])\s*```", re.DOTALL)


def json_array(text: str | None) -> list[Any] | None:
    """The strict JSON array that ``text`` consists of (possibly in a fenced block), or ``None``."""
    if not text:
        return None
    candidates = [text.strip()] + [m.group(1) for m in _FENCED_ARRAY.finditer(text)]
    for candidate in candidates:
        if not candidate.startswith("["):
            continue
        try:
            value = loads_strict(candidate)
        except StrictJSONError as exc:
            if exc.is_refusal:
                return None
            continue
        if isinstance(value, list):
            return value
    return None


def raw_step_list(raw: Any) -> list[Any]:
    """The list of step objects in whatever shape the model used.

    ``{"steps": [...]}`` (also under ``plan``/``tasks``/``dag``, nested once, or as a JSON string), a bare
    step object, a bare list, or an object of step objects keyed by id.
    """
    if isinstance(raw, list):
        return raw
    if not isinstance(raw, Mapping):
        return []
    for key in _STEP_LISTS:
        value = raw.get(key)
        if isinstance(value, str):
            value = json_array(value)
        if isinstance(value, list):
            return value
        if isinstance(value, Mapping):
            return raw_step_list(value)
    if _task_of(raw):
        return [raw]
    values = list(raw.values())
    if values and all(isinstance(v, Mapping) and _task_of(v) for v in values):
        return [{"id": key, **value} for key, value in raw.items()]
    return []


def _task_of(item: Mapping[str, Any]) -> str:
    for key in _TASK_KEYS:
        value = item.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def _clean_id(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return _SPACES.sub(" ", str(value)).strip()[:MAX_ID_CHARS]


def _dependency_ids(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [_clean_id(part) for part in value.split(",") if part.strip()]
    if isinstance(value, Sequence):
        return [_clean_id(v) for v in value]
    return [_clean_id(value)]


def steps_from_raw(raw: Any, *, tool_names: Collection[str] = ()) -> list[PlanStep]:
    """Normalised steps from the planner's output.

    Items without a task are dropped. Ids become unique strings (a missing id takes the step's position,
    a repeated one a ``-2``, ``-3``... suffix; a dependency on a repeated id means its first holder).
    Dependencies on ids that do not exist, and on the step itself, are pruned. ``tool_hint`` is kept only
    when it names a tool in ``tool_names``; ``model_hint`` only when it is a known role.
    Raises :class:`PlanValidationError` when no step is left.
    """
    items = [item for item in raw_step_list(raw) if isinstance(item, Mapping) and _task_of(item)]
    if not items:
        raise PlanValidationError("the plan has no step with a task")
    taken: set[str] = set()
    first_holder: dict[str, str] = {}
    ids: list[str] = []
    for position, item in enumerate(items, 1):
        wanted = _clean_id(item.get("id")) or str(position)
        step_id, suffix = wanted, 1
        while step_id in taken:
            suffix += 1
            step_id = f"{wanted}-{suffix}"
        taken.add(step_id)
        first_holder.setdefault(wanted, step_id)
        ids.append(step_id)
    steps = []
    for step_id, item in zip(ids, items, strict=True):
        dependencies: list[str] = []
        for wanted in _dependency_ids(item.get("dependencies", item.get("depends_on"))):
            target = first_holder.get(wanted)
            if target is None or target == step_id:
                logger.info("plan: pruned a dangling dependency of step %s", step_id)
                continue
            if target not in dependencies:
                dependencies.append(target)
        tool_hint = item.get("tool_hint")
        steps.append(
            PlanStep(
                id=step_id,
                task=_task_of(item),
                dependencies=dependencies,
                tool_hint=tool_hint if isinstance(tool_hint, str) and tool_hint in tool_names else None,
                model_hint=normalise_role(item.get("model_hint")),
            )
        )
    return steps


def topological_order(steps: Sequence[PlanStep]) -> list[str]:
    """Step ids in an order that respects dependencies (Kahn's algorithm; ties in id order).

    Raises :class:`PlanValidationError` naming the steps on a cycle. Dependencies must already be pruned
    to existing ids.
    """
    indegree = {step.id: len(step.dependencies) for step in steps}
    dependents: dict[str, list[str]] = {step.id: [] for step in steps}
    for step in steps:
        for dependency in step.dependencies:
            dependents[dependency].append(step.id)
    ready = sorted((i for i, n in indegree.items() if n == 0), key=id_order)
    order: list[str] = []
    while ready:
        current = ready.pop(0)
        order.append(current)
        for dependent in dependents[current]:
            indegree[dependent] -= 1
            if indegree[dependent] == 0:
                ready.append(dependent)
        ready.sort(key=id_order)
    if len(order) < len(steps):
        stuck = sorted((i for i, n in indegree.items() if n > 0), key=id_order)
        raise PlanValidationError(f"the dependencies form a cycle: steps {', '.join(stuck)} can never start")
    return order


__all__ = ["json_array", "raw_step_list", "steps_from_raw", "topological_order"]
