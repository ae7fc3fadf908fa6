"""The execution-mode router of ``auto`` agents: one cheap structured call picks ReAct or plan mode."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Literal

from agents.engine.llm import LLM, Usage
from agents.engine.metering import CallPurpose
from agents.engine.plan import prompts
from agents.engine.structured import structured_choice

logger = logging.getLogger(__name__)

Mode = Literal["react", "plan"]

ROUTER_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "mode": {"type": "string", "enum": ["react", "plan"]},
        "reason": {"type": "string"},
    },
    "required": ["mode"],
}


async def route_execution_mode(llm: LLM, goal: str, *, usage: Usage | None = None) -> Mode:
    """``"plan"`` when ``llm`` judges that ``goal`` needs a multi-step plan, else ``"react"``.

    Any failure (an unusable reply, an unreachable model) answers ``"react"``: the direct loop handles
    every request, plan mode only some better.
    """
    try:
        result = await structured_choice(
            llm,
            CallPurpose.ROUTER,
            prompts.ROUTER_SYSTEM,
            goal,
            schema=ROUTER_SCHEMA,
            function_name="choose_mode",
            function_description="Choose how to handle the user's message.",
        )
    except Exception as exc:  # routing is an optimisation: any failure keeps the default mode
        logger.warning("execution-mode routing failed (%s); using react", type(exc).__name__)
        return "react"
    if usage is not None:
        usage.add(result.usage)
    mode = result.value.get("mode")
    return "plan" if mode == "plan" else "react"


__all__ = ["ROUTER_SCHEMA", "Mode", "route_execution_mode"]
