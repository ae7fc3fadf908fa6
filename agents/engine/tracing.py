"""OpenTelemetry spans of a run, through ``opentelemetry-api`` only: the run, its model calls, its tool calls
and its hook verdicts.

Off unless :func:`enable` was called (the platform's wiring calls it when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is
set, after installing a tracer provider). Off, nothing is wrapped and :func:`run_span` is a shared no-op, so a
run pays one boolean test per run. On, the composition root wraps the run's LLMs (:class:`TracedLLM`), tools
(:class:`TracedTool`) and hooks (:class:`TracedHookRegistry`).

Spans carry who and what (``org``, ``agent``, ``run``, ``tool``, ``endpoint``, token counts, ``outcome``),
never prompts, answers, tool arguments or results: with ``content=True`` (the operator's debug setting) a model
call's span also carries the last message sent and the reply. API: https://opentelemetry.io/docs/languages/python/instrumentation/
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode, Tracer

from agents.engine.completion import ChatResponse, Usage
from agents.engine.hooks import HookContext, HookRegistry, PreToolUseOutcome
from agents.engine.llm import LLM, LLMWrapper, Message
from agents.engine.tool_context import ToolCallContext
from agents.engine.tools import Tool, ToolResult
from agents.engine.verdicts import Block, Park, Rewrite

__all__ = [
    "RunSpan",
    "TracedHookRegistry",
    "TracedLLM",
    "TracedTool",
    "disable",
    "enable",
    "enabled",
    "run_span",
]

Attributes = Mapping[str, str | int | bool]

_tracer: Tracer | None = None
_content = False
_CONTENT_LIMIT = 4000


def enable(provider: trace.TracerProvider | None = None, *, content: bool = False) -> None:
    """Trace runs from now on, with ``provider``'s tracer (else the global one); ``content``: put prompts and
    replies on model-call spans (debug only)."""
    global _tracer, _content
    source = provider if provider is not None else trace.get_tracer_provider()
    _tracer = source.get_tracer("agents.engine")
    _content = content


def disable() -> None:
    """Stop tracing runs (tests)."""
    global _tracer, _content
    _tracer, _content = None, False


def enabled() -> bool:
    return _tracer is not None


class RunSpan:
    """The span of a run (or nothing when tracing is off): its attributes and outcome are set as known."""

    __slots__ = ("span",)

    def __init__(self, span: Span | None) -> None:
        self.span = span

    def annotate(self, attributes: Attributes) -> None:
        if self.span is not None:
            self.span.set_attributes(dict(attributes))

    def outcome(self, outcome: str) -> None:
        if self.span is not None:
            self.span.set_attribute("outcome", outcome)


_OFF = RunSpan(None)


@contextmanager
def run_span(attributes: Attributes) -> Iterator[RunSpan]:
    """The run's span, current inside the block (model, tool and hook spans are its children)."""
    if _tracer is None:
        yield _OFF
        return
    with _tracer.start_as_current_span("agent.run", attributes=dict(attributes)) as span:
        yield RunSpan(span)


def annotate_current_run(attributes: Attributes) -> None:
    """Add ``attributes`` to the current span (the run's, when called where the run runs)."""
    if _tracer is not None:
        trace.get_current_span().set_attributes(dict(attributes))


def _failed(span: Span, exc: BaseException) -> None:
    span.set_attribute("outcome", type(exc).__name__)
    span.set_status(Status(StatusCode.ERROR, type(exc).__name__))


def _usage_attributes(span: Span, usage: Usage) -> None:
    span.set_attributes(
        {
            "tokens.prompt": usage.prompt_tokens,
            "tokens.completion": usage.completion_tokens,
            "tokens.total": usage.total_tokens,
            "tokens.cached": usage.cached_tokens,
            "tokens.reasoning": usage.reasoning_tokens,
        }
    )


def _clip(value: Any) -> str:
    return str(value or "")[:_CONTENT_LIMIT]


class TracedLLM(LLMWrapper):
    """An :class:`~agents.engine.llm.LLM` whose every call is a ``model.call`` span (``endpoint``, tokens,
    ``outcome``) under the caller's current span."""

    def __init__(self, llm: LLM, attributes: Attributes) -> None:
        super().__init__(llm)
        self._attributes = dict(attributes)

    def _start(self, messages: Sequence[Message], streamed: bool) -> Span:
        assert _tracer is not None  # wrapped only while tracing is on
        span = _tracer.start_span("model.call", attributes={**self._attributes, "streamed": streamed})
        if _content and messages:
            span.set_attribute("prompt", _clip(messages[-1].get("content")))
        return span

    async def chat(self, messages: Sequence[Message], **kwargs: Any) -> ChatResponse:
        if _tracer is None:
            return await self.wrapped_llm.chat(messages, **kwargs)
        span = self._start(messages, False)
        with trace.use_span(span, end_on_exit=True, record_exception=False, set_status_on_exception=False):
            try:
                response = await self.wrapped_llm.chat(messages, **kwargs)
            except BaseException as exc:
                _failed(span, exc)
                raise
            _usage_attributes(span, response.usage)
            span.set_attribute("outcome", "tool_calls" if response.tool_calls else "ok")
            if _content:
                span.set_attribute("completion", _clip(response.content))
            return response

    def stream_chat(
        self, messages: Sequence[Message], *, temperature: float | None = None, usage: Usage | None = None
    ) -> AsyncIterator[str]:
        return self._stream(messages, temperature, usage)

    async def _stream(
        self, messages: Sequence[Message], temperature: float | None, usage: Usage | None
    ) -> AsyncIterator[str]:
        if _tracer is None:
            async for delta in self.wrapped_llm.stream_chat(messages, temperature=temperature, usage=usage):
                yield delta
            return
        span = self._start(messages, True)
        used = Usage()
        produced: list[str] = []
        try:
            async for delta in self.wrapped_llm.stream_chat(messages, temperature=temperature, usage=used):
                if _content:
                    produced.append(delta)
                yield delta
            span.set_attribute("outcome", "ok")
        except BaseException as exc:
            _failed(span, exc)
            raise
        finally:
            if usage is not None:
                usage.add(used)
            _usage_attributes(span, used)
            if _content:
                span.set_attribute("completion", _clip("".join(produced)))
            span.end()


class TracedTool(Tool):
    """A :class:`~agents.engine.tools.Tool` whose every execution is a ``tool.call`` span (``tool``,
    ``outcome``: ``ok``, ``error`` or the exception's type)."""

    def __init__(self, tool: Tool, attributes: Attributes) -> None:
        self.wrapped_tool = tool
        self.name = tool.name
        self.description = tool.description
        self.parameters = tool.parameters
        self.timeout = tool.timeout
        self.pinned = tool.pinned
        self._attributes = {**attributes, "tool": tool.name}

    def __getattr__(self, name: str) -> Any:  # what a platform tool adds (its connector, its action...)
        if name == "wrapped_tool" or name.startswith("__"):  # not set yet (a copy), or a protocol probe
            raise AttributeError(name)
        return getattr(self.wrapped_tool, name)

    async def execute(self, ctx: ToolCallContext, /, **kwargs: Any) -> ToolResult | str:
        if _tracer is None:
            return await self.wrapped_tool.execute(ctx, **kwargs)
        with _tracer.start_as_current_span(
            "tool.call", attributes=self._attributes, record_exception=False, set_status_on_exception=False
        ) as span:
            try:
                result = await self.wrapped_tool.execute(ctx, **kwargs)
            except BaseException as exc:
                _failed(span, exc)
                raise
            failed = isinstance(result, ToolResult) and result.is_error
            span.set_attribute("outcome", "error" if failed else "ok")
            return result


def _verdict_name(verdict: Any) -> str:
    match verdict:
        case Block():
            return "block"
        case Park():
            return "park"
        case Rewrite():
            return "rewrite"
    return "allow"


class TracedHookRegistry(HookRegistry):
    """A :class:`~agents.engine.hooks.HookRegistry` whose pre-tool-use verdicts are ``hook.verdict`` spans
    (``tool``, ``verdict``: allow, block, park or rewrite, and ``hook``: the one that blocked)."""

    def __init__(self, attributes: Attributes, hooks: Iterable[Any] = ()) -> None:
        self._attributes = dict(attributes)
        super().__init__(hooks)

    async def run_pre(self, ctx: HookContext) -> PreToolUseOutcome:
        if _tracer is None:
            return await super().run_pre(ctx)
        with _tracer.start_as_current_span(
            "hook.verdict",
            attributes={**self._attributes, "tool": ctx.tool_name, "hook.point": "pre_tool_use"},
        ) as span:
            outcome = await super().run_pre(ctx)
            span.set_attribute("verdict", _verdict_name(outcome.verdict))
            if isinstance(outcome.verdict, Block) and outcome.verdict.hook:
                span.set_attribute("hook", outcome.verdict.hook)
            return outcome
