"""The plan analyser: did the round reach the goal, how sure is it, and what would the answer be.

One ``structured_llm_call`` on the smart model (the same judgement as planning). Plain text is read by a
regex fallback ("achieved: true", "confidence: 0.7", ...); when nothing usable comes back the verdict is
the safe default: not achieved, confidence 0. Step results are cut to 10,000 characters each.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from agents.engine.llm import Message, Usage
from agents.engine.metering import CallPurpose, call_purpose
from agents.engine.model_registry import SMART, ModelRegistry
from agents.engine.plan import prompts
from agents.engine.plan.models import DONE, Analysis, Plan
from agents.engine.structured import structured_llm_call
from agents.engine.synthesis import cut

logger = logging.getLogger(__name__)

RESULT_CHARS = 10000

ANALYSIS_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "achieved": {"type": "boolean"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "reasoning": {"type": "string"},
        "final_answer": {"type": "string"},
    },
    "required": ["achieved", "confidence", "reasoning", "final_answer"],
}

SAFE_DEFAULT = Analysis(achieved=False, confidence=0.0, reasoning="", final_answer="")

_KEY = r"[\"'*_]*{name}[\"'*_]*\s*[:=：]\s*"
_ACHIEVED_RE = re.compile(_KEY.format(name="achieved") + r"[\"']?(true|false|yes|no)\b", re.IGNORECASE)
_CONFIDENCE_RE = re.compile(_KEY.format(name="confidence") + r"[\"']?(\d+(?:\.\d+)?)\s*(%?)", re.IGNORECASE)
_REASONING_RE = re.compile(
    _KEY.format(name="reasoning") + r"(.+?)(?=\n\s*[\"'*_]*(?:final[_ ]answer|achieved|confidence)\b|\Z)",
    re.IGNORECASE | re.DOTALL,
)
_FINAL_RE = re.compile(_KEY.format(name="final[_ ]answer") + r"(.+)", re.IGNORECASE | re.DOTALL)
_TRUE = {"true", "yes", "1"}


def regex_analysis(text: str) -> dict[str, Any] | None:
    """The verdict in plain text ("achieved: true", "confidence: 0.7" or "70%", "reasoning: ..."), or None."""
    achieved = _ACHIEVED_RE.search(text)
    confidence = _CONFIDENCE_RE.search(text)
    if achieved is None and confidence is None:
        return None
    reasoning = _REASONING_RE.search(text)
    final = _FINAL_RE.search(text)
    value = float(confidence.group(1)) if confidence else 0.0
    if confidence and confidence.group(2):
        value /= 100
    return {
        "achieved": achieved is not None and achieved.group(1).lower() in _TRUE,
        "confidence": value,
        "reasoning": reasoning.group(1).strip().strip("\"'") if reasoning else "",
        "final_answer": final.group(1).strip().strip("\"'") if final else "",
    }


def parse_analysis(raw: Mapping[str, Any]) -> Analysis:
    """An :class:`Analysis` from the model's object, forgiving loose types (``"true"``, ``"0.8"``, ``80``)."""
    achieved = raw.get("achieved")
    if isinstance(achieved, str):
        achieved = achieved.strip().lower() in _TRUE
    try:
        confidence = float(raw.get("confidence") or 0.0)
    except (TypeError, ValueError):
        confidence = 0.0
    if 1.0 < confidence <= 100.0:  # a percentage
        confidence /= 100
    return Analysis(
        achieved=bool(achieved),
        confidence=min(1.0, max(0.0, confidence)),
        reasoning=str(raw.get("reasoning") or ""),
        final_answer=str(raw.get("final_answer") or ""),
    )


class PlanAnalyzer:
    """Judges a round's results against the goal (see the module docstring)."""

    def __init__(self, registry: ModelRegistry, *, result_chars: int = RESULT_CHARS) -> None:
        self.registry = registry
        self.result_chars = result_chars

    async def analyze(self, plan: Plan, *, usage: Usage | None = None) -> Analysis:
        """The verdict on ``plan`` (never raises for model failures: the safe default instead)."""
        try:
            with call_purpose(CallPurpose.ANALYSER):
                result = await structured_llm_call(
                    self.registry.get(SMART),
                    self.messages(plan),
                    schema=ANALYSIS_SCHEMA,
                    function_name="judge_plan",
                    function_description="Say whether the plan reached the goal, and answer it.",
                    parse_fn=parse_analysis,
                    default_value=SAFE_DEFAULT,
                    regex_fallback=regex_analysis,
                    validate_schema=False,  # parse_analysis forgives loose types
                )
        except Exception as exc:  # the verdict is advisory: a failure means "not reached"
            logger.warning("plan analysis failed (%s); assuming the goal is not reached", type(exc).__name__)
            return SAFE_DEFAULT
        if usage is not None:
            usage.add(result.usage)
        return result.value

    def messages(self, plan: Plan) -> list[Message]:
        """The analyser's prompt: the goal, then every step with its status and result (cut)."""
        blocks = []
        for step in plan.steps:
            if step.status == DONE:
                body = cut(step.result, self.result_chars)
            else:
                detail = step.error or step.status
                body = f"(not done: {detail})"
                if step.result:
                    body += "\n" + cut(step.result, self.result_chars)
            blocks.append(
                prompts.ANALYZER_STEP.format(step_id=step.id, status=step.status, task=step.task, body=body)
            )
        user = f"Goal:\n{plan.goal}\n\nSteps:\n\n" + "\n\n".join(blocks)
        return [{"role": "system", "content": prompts.ANALYZER_SYSTEM}, {"role": "user", "content": user}]


__all__ = ["ANALYSIS_SCHEMA", "SAFE_DEFAULT", "PlanAnalyzer", "parse_analysis", "regex_analysis"]
