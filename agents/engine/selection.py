"""Tool selection: with many tools, a light LLM call keeps only those relevant to the query."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from agents.engine.llm import LLM, Usage
from agents.engine.metering import CallPurpose
from agents.engine.prompts import TOOL_SELECTION_SYSTEM
from agents.engine.structured import structured_choice
from agents.engine.tools import ToolRegistry

logger = logging.getLogger(__name__)

SELECTION_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {"tools": {"type": "array", "items": {"type": "string"}}},
    "required": ["tools"],
}


async def select_tools(
    llm: LLM, registry: ToolRegistry, query: str, *, max_tools: int
) -> tuple[ToolRegistry, Usage]:
    """At most ``max_tools`` tools of ``registry`` relevant to ``query``, picked from the compact catalogue,
    and its pinned tools besides (:attr:`~agents.engine.tools.Tool.pinned`).

    Never fails: unparseable output, no valid name, or any error gives back the full registry.
    """
    system = TOOL_SELECTION_SYSTEM.format(max_tools=max_tools, catalogue=registry.catalogue())
    try:
        result = await structured_choice(
            llm,
            CallPurpose.SELECTION,
            system,
            query,
            schema=SELECTION_SCHEMA,
            function_name="select_tools",
            function_description="Choose the tools relevant to the user's request.",
        )
    except Exception as exc:  # selection is an optimisation: any failure means "use every tool"
        logger.warning("tool selection failed (%s); using all %d tools", type(exc).__name__, len(registry))
        return registry, Usage()
    names = [n for n in result.value.get("tools", []) if isinstance(n, str) and n in registry]
    names = list(dict.fromkeys(names))[:max_tools]
    if not names:
        logger.info("tool selection chose no valid tool; using all %d tools", len(registry))
        return registry, result.usage
    pinned = [tool.name for tool in registry if tool.pinned and tool.name not in names]
    return registry.subset([*names, *pinned]), result.usage
