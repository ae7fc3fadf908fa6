"""Fallback model endpoints: :class:`FallbackLLM`, one :class:`~agents.engine.llm.LLM` over an ordered chain.

A call goes to the first endpoint; when it fails because the endpoint is unavailable (HTTP 429, a 5xx, a
timeout or a connection error, after the SDK's own retries: see :func:`falls_back`) the same request goes to
the next one, and so on. Any other error (a prompt too long, a misconfigured or refused endpoint, a budget,
a malformed reply) is the request's own fault and is raised at once. A streamed call falls back only until
its first delta was delivered: after that the answer is the first endpoint's or an error.

An endpoint that failed is tried last for :data:`COOL_DOWN_SECONDS`, so a run whose first endpoint is down
does not wait for its timeouts on every call. The chain answers with the abilities every endpoint has (a
history written for one must be valid for the next) and the smallest context window.

``on_fallback`` is told (a :class:`FallbackAnswered`) each time an endpoint other than the first answered.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

import httpx2
import openai

from agents.engine.completion import ChatResponse, Usage
from agents.engine.llm import LLM, Message
from agents.engine.llm_errors import (
    ContextLengthExceededError,
    EndpointMisconfiguredError,
    EndpointRefusedError,
    LLMError,
    RateLimitedError,
)

__all__ = ["COOL_DOWN_SECONDS", "FallbackAnswered", "FallbackEndpoint", "FallbackLLM", "falls_back"]

logger = logging.getLogger(__name__)

#: How long an endpoint that failed is tried after the others.
COOL_DOWN_SECONDS = 30.0

# The abilities a request depends on: the chain has one only when every endpoint has it.
_SHARED_ABILITIES = ("tool_call", "parallel_tool_calls", "json_mode", "forced_tool_choice", "vision")


def falls_back(error: BaseException) -> bool:
    """Whether ``error`` means the endpoint is unavailable (429, 5xx, timeout, connection), so that another
    endpoint may answer the same request."""
    if not isinstance(error, LLMError) or isinstance(
        error, ContextLengthExceededError | EndpointMisconfiguredError | EndpointRefusedError
    ):
        return False
    if isinstance(error, RateLimitedError) or error.status_code == 429:
        return True
    if error.status_code is not None:
        return error.status_code >= 500
    # APITimeoutError is an APIConnectionError: both are what the SDK raises after its retries.
    return isinstance(error.__cause__, openai.APIConnectionError)


def _reason(error: LLMError) -> str:
    if error.status_code is not None:
        return f"HTTP {error.status_code}"
    cause = error.__cause__
    # The transport reports a connection that could not be made (refused, unreachable) as a connect timeout.
    if isinstance(cause, openai.APITimeoutError) and not isinstance(cause.__cause__, httpx2.ConnectTimeout):
        return "timeout"
    return "connection error"


@dataclass(frozen=True, slots=True)
class FallbackEndpoint:
    """One endpoint of a chain: its ``name`` (what the user is shown) and its LLM."""

    name: str
    llm: LLM


@dataclass(frozen=True, slots=True)
class FallbackAnswered:
    """An endpoint other than the chain's first answered: ``endpoint`` did, after ``failed`` (the endpoints
    that were tried first, in order) failed for ``reason`` (the first one's: ``HTTP 429``, ``timeout``...)."""

    endpoint: str
    failed: tuple[str, ...]
    reason: str
    type: Literal["fallback_answered"] = "fallback_answered"


class FallbackLLM:
    """An :class:`~agents.engine.llm.LLM` that answers from the first available endpoint of ``chain``."""

    def __init__(
        self,
        chain: Sequence[FallbackEndpoint],
        *,
        on_fallback: Callable[[FallbackAnswered], None] | None = None,
        cool_down: float = COOL_DOWN_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not chain:
            raise ValueError("a fallback chain needs at least one endpoint")
        self.chain = tuple(chain)
        self._on_fallback = on_fallback
        self._cool_down = cool_down
        self._clock = clock
        self._failed_at: dict[int, float] = {}
        primary = self.chain[0].llm
        merged = dict(primary.abilities)
        for key in _SHARED_ABILITIES:
            if key in merged:
                merged[key] = all(bool(e.llm.abilities.get(key, merged[key])) for e in self.chain)
        self.abilities: Mapping[str, bool] = MappingProxyType(merged)
        self.context_window = min(e.llm.context_window for e in self.chain)

    @property
    def model(self) -> str:
        """The first endpoint's model (for messages and logs)."""
        name = getattr(self.chain[0].llm, "model", None)
        return name if isinstance(name, str) else self.chain[0].name

    @property
    def base_url(self) -> str | None:
        return getattr(self.chain[0].llm, "base_url", None)

    def __repr__(self) -> str:
        return f"FallbackLLM({[e.name for e in self.chain]!r})"

    def _order(self) -> list[int]:
        """The chain's positions in the order to try them: endpoints that failed lately last."""
        now = self._clock()
        cooling = {i for i, at in self._failed_at.items() if now - at < self._cool_down}
        return [i for i in range(len(self.chain)) if i not in cooling] + sorted(cooling)

    def _failed(self, index: int, error: LLMError) -> None:
        self._failed_at[index] = self._clock()
        logger.warning(
            "model endpoint %r unavailable (%s); trying the next one", self.chain[index].name, _reason(error)
        )

    def _answered(self, index: int, failed: list[tuple[int, LLMError]]) -> None:
        self._failed_at.pop(index, None)
        if index == 0 or self._on_fallback is None:
            return
        self._on_fallback(
            FallbackAnswered(
                endpoint=self.chain[index].name,
                failed=tuple(self.chain[i].name for i, _ in failed),
                reason=_reason(failed[0][1]) if failed else "cooling down",
            )
        )

    async def chat(self, messages: Sequence[Message], **kwargs: Any) -> ChatResponse:
        order = self._order()
        failed: list[tuple[int, LLMError]] = []
        for position, index in enumerate(order):
            try:
                response = await self.chain[index].llm.chat(messages, **kwargs)
            except LLMError as exc:
                if position == len(order) - 1 or not falls_back(exc):
                    raise
                self._failed(index, exc)
                failed.append((index, exc))
                continue
            self._answered(index, failed)
            return response
        raise AssertionError("unreachable: the last endpoint's error is raised")  # pragma: no cover

    def stream_chat(
        self, messages: Sequence[Message], *, temperature: float | None = None, usage: Usage | None = None
    ) -> AsyncIterator[str]:
        return self._stream(messages, temperature, usage)

    async def _stream(
        self, messages: Sequence[Message], temperature: float | None, usage: Usage | None
    ) -> AsyncIterator[str]:
        order = self._order()
        failed: list[tuple[int, LLMError]] = []
        for position, index in enumerate(order):
            attempt = Usage()
            delivered = dropped = False
            stream = self.chain[index].llm.stream_chat(messages, temperature=temperature, usage=attempt)
            try:
                async for delta in stream:
                    delivered = True
                    yield delta
            except LLMError as exc:
                if delivered or position == len(order) - 1 or not falls_back(exc):
                    raise
                dropped = True  # nothing was delivered: the next endpoint answers from the start
                self._failed(index, exc)
                failed.append((index, exc))
                continue
            finally:
                aclose = getattr(stream, "aclose", None)
                if aclose is not None:
                    await aclose()
                if usage is not None and not dropped:  # a stream adds its usage when it closes
                    usage.add(attempt)
            self._answered(index, failed)
            return
