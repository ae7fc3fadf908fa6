"""Shared set-up of the usage tests: an organisation with a priced endpoint, tools, and a scripted model
that answers each request by what it is for (selection, compaction, tool loop, synthesis)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from agents.engine import prompts
from agents.engine.context_summary import SUMMARY_SYSTEM_PROMPT
from agents.engine.tools import FunctionTool
from platform_core.models import Role
from tests.agents.factories import AgentFactory, ConversationFactory, ModelConfigFactory
from tests.agents.ws_helpers import bearer_for, connect, frames_until_done
from tests.factories import OrganizationFactory, member_of
from tests.fakes.openai_server import call, text, tool_calls

SELECTION, COMPACTION, LOOP, SYNTHESIS = "selection", "compaction", "tool_loop", "synthesis"

# Every reply reports this usage: 1,000 prompt tokens of which 400 cached, 200 completion tokens of which
# 50 reasoning (as OpenAI's usage object nests them).
REPORTED = {
    "prompt_tokens": 1000,
    "completion_tokens": 200,
    "total_tokens": 1200,
    "prompt_tokens_details": {"cached_tokens": 400},
    "completion_tokens_details": {"reasoning_tokens": 50},
}
# Per million tokens: input 2, cached input 0.5, output 8 (USD). One call then costs
# 600 * 2 / 1e6 + 400 * 0.5 / 1e6 + 200 * 8 / 1e6 = 0.0012 + 0.0002 + 0.0016 = 0.003.
PRICES = {
    "price_input": Decimal("2"),
    "price_cached_input": Decimal("0.5"),
    "price_output": Decimal("8"),
    "price_currency": "USD",
}
CALL_COST = Decimal("0.003")


def kind_of(body: dict[str, Any]) -> str:
    system = str((body.get("messages") or [{}])[0].get("content") or "")
    if system.startswith(prompts.TOOL_SELECTION_SYSTEM[:40]):
        return SELECTION
    if system.startswith(SUMMARY_SYSTEM_PROMPT[:40]):
        return COMPACTION
    if body.get("stream"):
        return SYNTHESIS
    return LOOP


@dataclass
class ReActModel:
    """Answers a ReAct run: tool selection picks ``lookup_order``; the loop calls it ``tool_turns`` times
    (forever with ``None``), then answers; synthesis streams ``answer``. Every reply reports ``usage``."""

    tool_turns: int | None = 1
    answer: str = "Order 7 has shipped."
    usage: dict[str, Any] = field(default_factory=lambda: dict(REPORTED))
    kinds: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def install(self, server: Any, count: int = 200) -> ReActModel:
        server.script(*([self] * count))
        return self

    def __call__(self, body: dict[str, Any]) -> Any:
        kind = kind_of(body)
        with self._lock:
            self.kinds.append(kind)
        if kind == SELECTION:
            return tool_calls(call("select_tools", {"tools": ["lookup_order"]}), usage=self.usage)
        if kind == COMPACTION:
            return text("Earlier the user asked about many orders.", usage=self.usage)
        if kind == SYNTHESIS:
            return text(self.answer, usage=self.usage, chunk_size=8)
        turns = sum(1 for m in body["messages"] if m.get("role") == "tool")
        if self.tool_turns is None or turns < self.tool_turns:
            return tool_calls(call("lookup_order", {"order_id": "7"}, id=f"c{turns}"), usage=self.usage)
        return text(self.answer, usage=self.usage)


def order_tools(count: int = 1) -> Any:
    """A tool factory for ``runtime.connector_tools_for_run``: ``lookup_order`` plus ``count - 1`` others."""
    schema = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}

    async def lookup_order(order_id: str) -> str:
        return f"order {order_id}: shipped"

    async def other(order_id: str = "") -> str:
        return "nothing"

    def factory(blueprint: Any) -> list[FunctionTool]:
        tools = [FunctionTool("lookup_order", "Look up an order", lookup_order, parameters=schema)]
        tools += [FunctionTool(f"tool_{n}", f"Another tool {n}", other) for n in range(1, count)]
        return tools

    return factory


def build_org(
    base_url: str, *, mode: str = "react", context_window: int = 128000, max_output: int | None = None
):
    """An org with a priced default endpoint, a member ``mia`` and an agent in ``mode``."""
    org = OrganizationFactory(slug="acme")
    user = member_of(org, Role.MEMBER, username="mia")
    config = ModelConfigFactory(
        organization=org,
        base_url=base_url,
        model="priced-model",
        is_default=True,
        context_window=context_window,
        max_output_tokens=max_output,
        **PRICES,
    )
    agent = AgentFactory(
        organization=org, instructions="Be brief.", execution_mode=mode, completion_check=False
    )
    return org, user, agent, config


def conversation_for(org: Any, user: Any, agent: Any) -> Any:
    return ConversationFactory(organization=org, user=user, agent=agent)


async def ask(
    user: Any,
    conversation: Any,
    content: str,
    *,
    accept_language: str | None = None,
    cookie: str | None = None,
) -> list[dict[str, Any]]:
    """Send ``content`` on the conversation's websocket (opened with ``accept_language`` and ``cookie``,
    where the user's interface language comes from, when given); the frames until ``done``."""
    ws, connected, code = await connect(
        conversation.pk, await bearer_for(user), accept_language=accept_language, cookie=cookie
    )
    assert connected and code is None
    try:
        await ws.send_json_to({"type": "message", "content": content})
        return await frames_until_done(ws)
    finally:
        await ws.disconnect()


def done_of(frames: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return next(f["data"] for f in frames if f["event"] == "done")
