"""A scripted model for plan-mode runs: each request is answered by what it is, not by its position.

Plan steps run concurrently, so the order in which their requests reach the scripted server is not
fixed. :class:`PlanModel` is one reply callable for every request: it tells the router, the planner,
the analyser, each step's agent (by its task) and the streamed synthesis apart, answers each from its
script, and records ``(kind, model)`` for every request so tests can check which endpoint served what.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.engine.plan import prompts as plan_prompts
from tests.fakes.openai_server import Reply, ScriptedOpenAIServer, call, error, text, tool_calls

ROUTER, PLANNER, ANALYZER, SUMMARY = "router", "planner", "analyzer", "summary"
STEP, SYNTHESIS, CHAT = "step", "synthesis", "chat"
# Each plan-mode call is known by the start of its system prompt (whatever level of the structured-output
# chain asks: a forced function call, JSON mode or plain text).
_SYSTEMS = {
    plan_prompts.ROUTER_SYSTEM[:40]: ROUTER,
    plan_prompts.PLANNER_SYSTEM[:40]: PLANNER,
    plan_prompts.ANALYZER_SYSTEM[:40]: ANALYZER,
    plan_prompts.HISTORY_SUMMARY_SYSTEM[:40]: SUMMARY,
}
_STEP_HEAD = plan_prompts.STEP_TASK.split("{", 1)[0]


def step(
    step_id: str, task: str, *, deps: Sequence[str] = (), tool: str | None = None, model: str | None = None
):
    """One planned step as the planner returns it."""
    return {"id": step_id, "task": task, "dependencies": list(deps), "tool_hint": tool, "model_hint": model}


def verdict(achieved: bool, confidence: float, reasoning: str, final_answer: str = "") -> dict[str, Any]:
    return {
        "achieved": achieved,
        "confidence": confidence,
        "reasoning": reasoning,
        "final_answer": final_answer,
    }


def _user_text(body: Mapping[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in body.get("messages", []) if m.get("role") == "user")


def kind_of(body: Mapping[str, Any]) -> str:
    """What a request is for."""
    messages = body.get("messages") or [{}]
    if messages[0].get("role") == "system":
        kind = _SYSTEMS.get(str(messages[0].get("content") or "")[:40])
        if kind is not None:
            return kind
    if body.get("stream"):
        return SYNTHESIS
    if _user_text(body).startswith(_STEP_HEAD):
        return STEP
    return CHAT


def task_of(body: Mapping[str, Any]) -> str:
    """The task of a step agent's request (the line after ``Your step (id):``)."""
    text_ = _user_text(body)
    return text_.split("):\n", 1)[1].split("\n", 1)[0].strip() if "):\n" in text_ else ""


@dataclass
class PlanModel:
    """Answers a plan run. ``plans`` and ``verdicts`` are per round; ``steps`` maps a task to the replies of
    its agent, one per turn (a callable gets the request body); ``mode`` answers the router (``None``: the
    router fails); ``chat`` answers any other call (ReAct mode's loop)."""

    plans: Sequence[Sequence[Mapping[str, Any]]] = ()
    verdicts: Sequence[Mapping[str, Any]] = ()
    steps: Mapping[str, Sequence[Reply | Callable[[dict[str, Any]], Reply]]] = field(default_factory=dict)
    answer: str = "The plan is done."
    mode: str | None = None
    chat: Sequence[Reply] = ()
    # Called with (kind, how many of that kind came before) before answering: a test may block it.
    before: Callable[[str, int], object] | None = None
    requests: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def install(self, server: ScriptedOpenAIServer, count: int = 60) -> PlanModel:
        server.script(*([self] * count))
        return self

    def __call__(self, body: dict[str, Any]) -> Reply:
        kind = kind_of(body)
        with self._lock:
            seen = sum(1 for k, _, _ in self.requests if k == kind)
            self.requests.append((kind, str(body.get("model")), body))
        if self.before is not None:
            self.before(kind, seen)
        if kind == ROUTER:
            if self.mode is None:
                return error(500, "the router is down")
            return tool_calls(call("choose_mode", {"mode": self.mode, "reason": "scripted"}))
        if kind == PLANNER:
            return tool_calls(call("make_plan", {"steps": list(self.plans[min(seen, len(self.plans) - 1)])}))
        if kind == ANALYZER:
            return tool_calls(call("judge_plan", dict(self.verdicts[min(seen, len(self.verdicts) - 1)])))
        if kind == SUMMARY:
            return text("Earlier, the user asked about orders 1 to 6.")
        if kind == SYNTHESIS:
            return text(self.answer, chunk_size=12)
        if kind == STEP:
            replies = self.steps.get(task_of(body))
            if not replies:
                return text(f"no script for the step {task_of(body)!r}")
            turn = sum(1 for m in body["messages"] if m.get("role") == "assistant")
            reply = replies[min(turn, len(replies) - 1)]
            return reply(body) if callable(reply) else reply
        return self.chat[min(seen, len(self.chat) - 1)] if self.chat else text(self.answer)

    def kinds(self) -> list[str]:
        return [kind for kind, _, _ in self.requests]

    def models(self, kind: str) -> list[str]:
        """The model names requests of ``kind`` asked for, in order."""
        return [model for k, model, _ in self.requests if k == kind]

    def step_models(self) -> dict[str, str]:
        """Each step task and the model its agent asked for."""
        return {task_of(body): model for k, model, body in self.requests if k == STEP}

    def bodies(self, kind: str) -> list[dict[str, Any]]:
        return [body for k, _, body in self.requests if k == kind]
