"""One model call of the tool loop: compaction before it, one retry after a context-length error, and the
request again without a field the endpoint refused (JSON mode, ``parallel_tool_calls``: see
:mod:`agents.engine.abilities`)."""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import Any

from agents.engine import events
from agents.engine.abilities import JSON_MODE, PARALLEL_TOOL_CALLS, endpoint_name, is_refusal, refuse
from agents.engine.llm import (
    LLM,
    ChatResponse,
    ContextLengthExceededError,
    EndpointMisconfiguredError,
    EndpointRefusedError,
    LLMError,
    RateLimitedError,
)
from agents.engine.prompts import speaks_chinese, with_json_word
from agents.engine.run_state import RunState
from agents.engine.text_tool_calls import MISCONFIGURED_TOOL_PARSER, find_text_tool_calls

logger = logging.getLogger(__name__)


class LLMFailed(Exception):
    """The model could not be reached (after the client's retries): the run ends with ``llm_error``."""

    def __init__(self, cause: LLMError, endpoint: str = "") -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.endpoint = endpoint

    @property
    def label(self) -> str:
        """What the user is told (in English): see :meth:`label_for`."""
        return self.label_for("")

    def label_for(self, query: str, language: str | None = None) -> str:
        """What the user is told, in ``language`` (the user's interface language), else ``query``'s: for a
        configuration error or a limit of the endpoint (refused address, misconfiguration, rate limit,
        context window), what happened and at which endpoint; else the error's type."""
        cause = self.cause
        zh = speaks_chinese(language=language, query=query)
        where = self.endpoint or ("模型端点" if zh else "the model endpoint")
        if isinstance(cause, EndpointRefusedError | EndpointMisconfiguredError):
            return str(cause)
        if isinstance(cause, RateLimitedError) or cause.status_code == 429:
            wait = getattr(cause, "retry_after", None)
            if zh:
                asked = f"，要求等待 {wait:g} 秒" if wait is not None else ""
                return f"{where} 正在限制请求频率（HTTP 429）{asked}"
            asked = f"; it asked to wait {wait:g} s" if wait is not None else ""
            return f"{where} is rate limiting requests (HTTP 429){asked}"
        if isinstance(cause, ContextLengthExceededError):
            if zh:
                return f"对话长度超过了 {where} 的上下文窗口"
            return f"the conversation is longer than the context window of {where}"
        return _failure_label(cause, where, zh)


def _failure_label(cause: LLMError, where: str, zh: bool) -> str:
    """What failed, by the error's kind; never an internal class name."""
    status = cause.status_code
    model = cause.model or ("模型" if zh else "the model")
    if cause.kind == "unreachable":
        return f"无法连接{where}" if zh else f"{where} cannot be reached"
    if cause.kind == "timed_out":
        return f"{where} 没有及时应答" if zh else f"{where} did not answer in time"
    if cause.kind == "key_refused":
        return (
            f"{where} 拒绝了 API 密钥（HTTP {status}）"
            if zh
            else f"{where} refused the API key (HTTP {status})"
        )
    if cause.kind == "model_unknown":
        if zh:
            return f"{where} 不认识模型“{model}”（HTTP {status}）"
        return f"{where} does not know the model “{model}” (HTTP {status})"
    if cause.kind == "server_error":
        if zh:
            return f"{where} 返回了服务器错误（HTTP {status}）"
        return f"{where} answered with a server error (HTTP {status})"
    if status is not None:
        return (
            f"{where} 返回了错误（HTTP {status}）"
            if zh
            else f"{where} answered with an error (HTTP {status})"
        )
    return f"{where} 的回复无法读取" if zh else f"the reply of {where} could not be read"


def misconfigured(message: str, status_code: int | None = None) -> EndpointMisconfiguredError:
    """The error for an endpoint whose settings do not match what it does."""
    error = EndpointMisconfiguredError(message)
    error.status_code = status_code
    return error


# The fields a tool-loop request may carry that an endpoint can refuse, and the ability each belongs to.
_DROPPABLE = ((JSON_MODE, "response_format"), (PARALLEL_TOOL_CALLS, "parallel_tool_calls"))


async def ask(llm: LLM, run: RunState, guard: Any | None, **kwargs: Any) -> ChatResponse:
    """Call ``llm.chat`` with the run's history (provider view), after the context guard's check.

    A provider "context length exceeded" error compacts the history to half the guard's budget and
    retries once. Raises :class:`LLMFailed` for any other :class:`LLMError`, after closing the call's
    ``thinking`` step with the error.
    """
    started = time.perf_counter()
    if guard is not None:
        await compact(guard, run)
    asked = time.perf_counter()
    run.turn_compaction = asked - started
    if run.emit.active:
        await run.emit(events.thinking_start(run.iteration))
    try:
        response = await _chat(llm, run, guard, kwargs)  # ask's own dict: the retry may drop a field
    except LLMError as exc:
        failed = LLMFailed(exc, endpoint_name(llm))
        if run.emit.active:
            await run.emit(
                events.thinking_done(run.iteration, "", error=failed.label_for(run.query, run.language))
            )
        raise failed from exc
    run.turn_llm = time.perf_counter() - asked
    run.usage.add(response.usage)
    return response


async def _chat(llm: LLM, run: RunState, guard: Any | None, kwargs: dict[str, Any]) -> ChatResponse:
    """``llm.chat`` on the history; again without a field the endpoint refused (each field once)."""
    while True:
        try:
            return await _chat_within_context(llm, run, guard, kwargs)
        except LLMError as exc:
            dropped = next(
                (p for p in _DROPPABLE if kwargs.get(p[1]) is not None and is_refusal(exc, p[0])), None
            )
            if dropped is None:
                raise
            ability, field = dropped
            refuse(llm, ability, exc)
            del kwargs[field]
            logger.info("retrying the model call without %s", field)


async def _chat_within_context(
    llm: LLM, run: RunState, guard: Any | None, kwargs: dict[str, Any]
) -> ChatResponse:
    """One call; a "context length exceeded" error compacts to half the budget and retries once."""
    messages = run.transcript.wire
    try:
        return await llm.chat(_for_request(messages, kwargs), **kwargs)
    except ContextLengthExceededError:
        if guard is None:
            raise
        logger.info("context length exceeded; compacting to half the budget and retrying once")
        retry_started = time.perf_counter()
        compacted = await compact(guard, run, target_tokens=half_budget(guard, llm))
        run.turn_compaction += time.perf_counter() - retry_started
        if not compacted:
            raise
        return await llm.chat(_for_request(run.transcript.wire, kwargs), **kwargs)


def _for_request(messages: Any, kwargs: dict[str, Any]) -> Any:
    """The messages as sent: a JSON-mode request says "json" (see :func:`~agents.engine.prompts.with_json_word`)."""
    return with_json_word(messages) if kwargs.get("response_format") is not None else messages


async def tool_calls_in_text(llm: LLM, run: RunState, response: ChatResponse) -> ChatResponse:
    """A native-mode reply whose text is tool calls (an endpoint without a tool parser, see
    :mod:`agents.engine.text_tool_calls`) as a reply with those calls; any other reply as it is. Text that is a
    tool call gone wrong closes the call's ``thinking`` step and raises :class:`LLMFailed` naming the setting."""
    if response.tool_calls or not response.content:
        return response
    names = frozenset(run.registry.names())
    found = find_text_tool_calls(response.content, names, id_prefix=f"text_call_{run.iteration}_")
    if found.calls:
        logger.warning(
            "%s returned %d tool call(s) as text: run as tool calls (configure its tool parser)",
            endpoint_name(llm),
            len(found.calls),
        )
        return replace(response, content=found.content or None, tool_calls=found.calls)
    if not found.broken:
        return response
    message = MISCONFIGURED_TOOL_PARSER.format(endpoint=endpoint_name(llm), why=found.broken)
    failed = LLMFailed(misconfigured(message), endpoint_name(llm))
    if run.emit.active:
        await run.emit(
            events.thinking_done(run.iteration, "", error=failed.label_for(run.query, run.language))
        )
    raise failed


def half_budget(guard: Any, llm: LLM) -> int:
    """Half the guard's token budget (half the model's context window if the guard has none)."""
    budget = getattr(guard, "budget", None)
    if not isinstance(budget, int) or budget <= 0:
        budget = llm.context_window
    return max(1, budget // 2)


async def compact(guard: Any, run: RunState, *, target_tokens: int | None = None) -> bool:
    """Let the guard compact the history; emit ``compact`` when it did. Never raises."""
    try:
        outcome = await guard.check_and_compact(
            run.transcript.messages, usage=run.usage, target_tokens=target_tokens
        )
    except Exception as exc:  # compaction is best effort: an oversized request fails on its own
        logger.warning("context compaction failed (%s); keeping the history", type(exc).__name__)
        return False
    if not outcome.compacted:
        return False
    run.transcript.replace(outcome.messages)
    if run.emit.active:
        await run.emit(events.compact(outcome.original_messages, outcome.kept_messages))
    return True
