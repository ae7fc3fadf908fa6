"""Every model call reported and guarded: :class:`MeteredLLM` asks a :class:`ModelCallMeter` before each
call (the budgets' guard rail) and reports each call's usage to it after (the accounting).

The engine does not know about budgets or rows: the apps implement the meter. A call site says why it
calls the model with :func:`call_purpose` (a context variable, so the tasks a plan step starts inherit it);
a call outside any is part of the tool loop.

``before_model_call`` answers :class:`Proceed` (with whatever the meter reserved, handed back with the
report) or a :class:`BudgetRefusal`: the call is then not made and :class:`BudgetExceededError` (an
:class:`~agents.engine.llm_errors.LLMError`) is raised, which ends the run with
:attr:`~agents.engine.stop_reasons.StopReason.BUDGET_EXCEEDED`. Every call that was let through is reported
exactly once, failed ones with no usage (``failed``), so a meter can settle its reservation.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal, Protocol

from agents.engine.completion import ChatResponse, Usage
from agents.engine.llm import LLM, LLMWrapper, Message
from agents.engine.llm_errors import LLMError
from agents.engine.prompts import speaks_chinese

__all__ = [
    "BudgetExceededError",
    "BudgetRefusal",
    "CallPurpose",
    "CallVerdict",
    "MeteredLLM",
    "ModelCall",
    "ModelCallMeter",
    "ModelCallUsage",
    "Proceed",
    "budget_watch",
    "call_purpose",
    "current_purpose",
]


class CallPurpose(StrEnum):
    """Why the engine calls a model."""

    TOOL_LOOP = "tool_loop"
    SYNTHESIS = "synthesis"
    PLANNER = "planner"
    ANALYSER = "analyser"
    ROUTER = "router"
    SELECTION = "selection"
    COMPACTION = "compaction"


_PURPOSE: ContextVar[CallPurpose] = ContextVar("model_call_purpose", default=CallPurpose.TOOL_LOOP)


@contextmanager
def call_purpose(purpose: CallPurpose) -> Iterator[None]:
    """The model calls made inside are made for ``purpose``."""
    token = _PURPOSE.set(purpose)
    try:
        yield
    finally:
        _PURPOSE.reset(token)


def current_purpose() -> CallPurpose:
    """The purpose of a model call made now."""
    return _PURPOSE.get()


# The refusals of the run being watched (see :func:`budget_watch`): a list shared by the tasks the run starts.
_REFUSALS: ContextVar[list[BudgetRefusal] | None] = ContextVar("budget_refusals", default=None)


@contextmanager
def budget_watch() -> Iterator[list[BudgetRefusal]]:
    """Collect the budget refusals of every model call made inside, in this task and the tasks it starts
    (plan steps), so a loop whose calls degrade quietly (the planner, the analyser) can tell that a budget
    ended it."""
    refusals: list[BudgetRefusal] = []
    token = _REFUSALS.set(refusals)
    try:
        yield refusals
    finally:
        _REFUSALS.reset(token)


# Per message, what the chat template adds around its content (role and separator tokens; 3 to 4 in
# OpenAI's counting, https://github.com/openai/openai-cookbook/blob/main/examples/How_to_count_tokens_with_tiktoken.ipynb).
MESSAGE_OVERHEAD_TOKENS = 8


def prompt_bound(messages: Sequence[Message], tools: Any = None) -> int:
    """At least as many tokens as the prompt can have: byte-level BPE tokenizers (GPT, Qwen, DeepSeek, GLM,
    Kimi) never make more tokens than UTF-8 bytes, plus the template's tokens per message; tool calls and
    tool schemas count by their JSON. The run's history (a :class:`~agents.engine.transcript.WireView`)
    remembers each message's bound, so that a call costs in proportion to what is new."""
    memo = getattr(messages, "memo", None)
    total = sum(memo(_message_bound) if callable(memo) else map(_message_bound, messages))
    if tools:
        total += len(json.dumps(tools, ensure_ascii=False).encode())
    return total


def _message_bound(message: Message) -> int:
    content = message.get("content")
    total = len((content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)).encode())
    calls = message.get("tool_calls")
    if calls:
        total += len(json.dumps(calls, ensure_ascii=False).encode())
    return total + MESSAGE_OVERHEAD_TOKENS


@dataclass(frozen=True, slots=True)
class ModelCall:
    """A model call about to be made: why, to which endpoint, and how many tokens it may use at most
    (``estimated_tokens``: :func:`prompt_bound` plus the most the reply may take: the endpoint's output
    limit, else its context window; 0 for a meter that wants no estimates)."""

    purpose: CallPurpose
    endpoint_id: str
    model: str
    estimated_tokens: int


@dataclass(frozen=True, slots=True)
class ModelCallUsage:
    """What one model call used (``failed``: it raised; ``usage`` is then empty)."""

    purpose: CallPurpose
    endpoint_id: str
    model: str
    usage: Usage
    failed: bool = False
    reservation: Any = None
    type: Literal["model_call_usage"] = "model_call_usage"


@dataclass(frozen=True, slots=True)
class Proceed:
    """The call may be made; ``reservation`` comes back with its :class:`ModelCallUsage`."""

    reservation: Any = None
    type: Literal["proceed"] = "proceed"


@dataclass(frozen=True, slots=True)
class BudgetRefusal:
    """The call would go past a budget: ``name`` (as the admin named it), whose calls it counts
    (``scope``: ``organization``, ``user`` or ``agent``), what (``metric``: ``tokens`` or ``cost``), over
    which ``period`` (``day`` or ``month``), and its ``limit`` as text (with the currency of a cost)."""

    name: str
    scope: str
    metric: str
    period: str
    limit: str
    type: Literal["refuse"] = "refuse"

    def label_for(self, query: str, language: str | None = None) -> str:
        """What the user is told, in ``language`` (the user's interface language), else ``query``'s."""
        if speaks_chinese(language=language, query=query):
            scope = _SCOPES_ZH.get(self.scope, self.scope)
            period = "每日" if self.period == "day" else "每月"
            metric = "Token" if self.metric == "tokens" else "费用"
            return f"{scope}的{period}{metric}预算「{self.name}」（{self.limit}）已用完"
        period = "daily" if self.period == "day" else "monthly"
        metric = "token" if self.metric == "tokens" else "cost"
        return f"the {period} {metric} budget “{self.name}” of the {self.scope} ({self.limit}) is used up"


_SCOPES_ZH = {"organization": "组织", "user": "用户", "agent": "智能体"}

CallVerdict = Proceed | BudgetRefusal


class BudgetExceededError(LLMError):
    """A model call was not made: it would have gone past a budget."""

    def __init__(self, refusal: BudgetRefusal) -> None:
        super().__init__(
            f"budget {refusal.name!r} ({refusal.scope} {refusal.period} {refusal.metric}) reached"
        )
        self.refusal = refusal


class ModelCallMeter(Protocol):
    """The apps' side of the accounting and the budgets. A meter with ``wants_estimates = False`` (no
    budgets to check) gets no estimate, so a call costs no pass over the history."""

    async def before_model_call(self, call: ModelCall) -> CallVerdict: ...

    async def after_model_call(self, report: ModelCallUsage) -> None: ...


class MeteredLLM(LLMWrapper):
    """An :class:`~agents.engine.llm.LLM` whose every call is let through by ``meter`` first and reported to
    it after. ``endpoint_id`` names the endpoint for the meter; ``max_output_tokens`` bounds a reply's share
    of the estimate (the endpoint's limit; else a quarter of the context window)."""

    def __init__(
        self, llm: LLM, meter: ModelCallMeter, *, endpoint_id: str = "", max_output_tokens: int | None = None
    ) -> None:
        super().__init__(llm)
        self._meter = meter
        self.endpoint_id = endpoint_id
        self._max_output = max_output_tokens or max(1, llm.context_window)

    async def _admit(self, messages: Sequence[Message], purpose: CallPurpose, tools: Any = None) -> Any:
        bound = prompt_bound(messages, tools) if getattr(self._meter, "wants_estimates", True) else 0
        call = ModelCall(purpose, self.endpoint_id, self.model, bound + self._max_output)
        match await self._meter.before_model_call(call):
            case BudgetRefusal() as refusal:
                watching = _REFUSALS.get()
                if watching is not None:
                    watching.append(refusal)
                raise BudgetExceededError(refusal)
            case Proceed(reservation=reservation):
                return reservation
        raise TypeError("a meter answers Proceed or BudgetRefusal")  # pragma: no cover - typed away

    async def _report(self, purpose: CallPurpose, usage: Usage, reservation: Any, *, failed: bool) -> None:
        await self._meter.after_model_call(
            ModelCallUsage(purpose, self.endpoint_id, self.model, usage, failed, reservation)
        )

    async def chat(self, messages: Sequence[Message], **kwargs: Any) -> ChatResponse:
        purpose = current_purpose()
        reservation = await self._admit(messages, purpose, kwargs.get("tools"))
        try:
            response = await self.wrapped_llm.chat(messages, **kwargs)
        except BaseException:
            await self._report(purpose, Usage(), reservation, failed=True)
            raise
        await self._report(purpose, response.usage, reservation, failed=False)
        return response

    def stream_chat(
        self, messages: Sequence[Message], *, temperature: float | None = None, usage: Usage | None = None
    ) -> AsyncIterator[str]:
        # The purpose is read now: the generator's body runs in its consumer's context, later.
        return self._stream(current_purpose(), messages, temperature, usage)

    async def _stream(
        self,
        purpose: CallPurpose,
        messages: Sequence[Message],
        temperature: float | None,
        usage: Usage | None,
    ) -> AsyncIterator[str]:
        reservation = await self._admit(messages, purpose)
        used = Usage()
        failed = True
        try:
            async for delta in self.wrapped_llm.stream_chat(messages, temperature=temperature, usage=used):
                yield delta
            failed = False
        finally:
            if usage is not None:
                usage.add(used)
            await self._report(purpose, used, reservation, failed=failed and not used.calls)
