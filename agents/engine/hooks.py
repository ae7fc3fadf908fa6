"""Hooks: deterministic code around every tool call that the model cannot talk its way past.

- :class:`PreToolUseHook` runs after the model chose a tool and before it runs: it may block the call
  (the model sees the reason), rewrite its arguments (the next hook sees the rewritten ones), or cause
  side effects. It may await for a long time (a human approval); tool timeouts do not cover hooks.
- :class:`PostToolUseHook` runs after the call, before the model sees the observation: it may rewrite
  the result. It runs for EVERY call outcome, blocked and invalid calls included (``ctx.outcome`` and
  ``ctx.blocked_by`` say what happened), so an audit hook sees every attempt.
- :class:`SessionStartHook` runs once when a run starts and may add text to the system prompt.

Hooks run in ``priority`` order, lower first (ties keep registration order). The first block wins.
Guard rails fail closed: a pre-hook that raises blocks the call, except with
:class:`~agents.engine.durable.RunSuspended`, which parks the whole run (durable runs). A post-hook
that raises leaves the result unchanged and is logged; a session-start hook that raises adds nothing
and is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from agents.engine.durable import RunSuspended
from agents.engine.tools import ToolResult

logger = logging.getLogger(__name__)

#: Values of :attr:`HookContext.outcome`.
OUTCOME_PENDING = "pending"
OUTCOME_OK = "ok"
OUTCOME_ERROR = "error"
OUTCOME_TIMEOUT = "timeout"
OUTCOME_BLOCKED = "blocked"
OUTCOME_INVALID_ARGS = "invalid_args"
OUTCOME_UNKNOWN_TOOL = "unknown_tool"


@dataclass(frozen=True, slots=True)
class HookContext:
    """What a hook knows about one tool call.

    ``tool_args`` are the arguments as rewritten so far (do not mutate them; return ``modified_args``).
    ``metadata`` is the run's metadata (org_id, run_id, user, ...) given to ``ReActAgent.run()``.
    For post hooks, ``outcome`` is one of ``ok``, ``error``, ``timeout``, ``blocked``, ``invalid_args``,
    ``unknown_tool`` and ``blocked_by`` names the pre-hook that blocked the call. ``replayed`` is True when
    a resumed run runs again a call that was pending when it stopped (a gate may find its earlier
    request for the same ``tool_call_id``).
    """

    tool_name: str
    tool_args: Mapping[str, Any]
    tool_call_id: str
    iteration: int
    metadata: Mapping[str, Any] = field(default_factory=dict)
    outcome: str = OUTCOME_PENDING
    blocked_by: str | None = None
    replayed: bool = False


@dataclass(frozen=True, slots=True)
class HookResult:
    """A hook's verdict. ``None`` from a hook means "allow, change nothing"."""

    allow: bool = True
    modified_args: Mapping[str, Any] | None = None
    modified_result: ToolResult | str | None = None
    error: str | None = None

    @classmethod
    def block(cls, reason: str) -> HookResult:
        """Refuse the call; the model sees ``reason``."""
        return cls(allow=False, error=reason)

    @classmethod
    def rewrite_args(cls, args: Mapping[str, Any]) -> HookResult:
        return cls(modified_args=args)

    @classmethod
    def rewrite_result(cls, result: ToolResult | str) -> HookResult:
        return cls(modified_result=result)


@dataclass(frozen=True, slots=True)
class SessionContext:
    """What a session-start hook knows: the run's query and metadata."""

    query: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


class _Hook:
    priority: int = 100

    @property
    def hook_name(self) -> str:
        return getattr(self, "name", None) or type(self).__name__


class PreToolUseHook(_Hook):
    """Runs before a tool call. Return ``HookResult.block(...)`` to refuse it."""

    async def pre_tool_use(self, ctx: HookContext) -> HookResult | None:
        raise NotImplementedError


class PostToolUseHook(_Hook):
    """Runs after a tool call (any outcome). Return ``HookResult.rewrite_result(...)`` to change what the
    model sees."""

    async def post_tool_use(self, ctx: HookContext, result: ToolResult) -> HookResult | None:
        raise NotImplementedError


class SessionStartHook(_Hook):
    """Runs when a run starts; the returned text is added to the system prompt."""

    async def session_start(self, ctx: SessionContext) -> str | None:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class PreToolUseOutcome:
    """The combined verdict of all pre-hooks for one call."""

    allowed: bool
    args: Mapping[str, Any]
    args_modified: bool = False
    blocked_by: str | None = None
    reason: str | None = None


class HookRegistry:
    """The hooks of an agent, kept sorted by priority (lower first)."""

    def __init__(self, hooks: Iterable[_Hook] = ()) -> None:
        self._pre: list[PreToolUseHook] = []
        self._post: list[PostToolUseHook] = []
        self._session: list[SessionStartHook] = []
        for hook in hooks:
            self.add(hook)

    def add(self, hook: _Hook) -> _Hook:
        """Register a hook under every point it implements (a class may implement several)."""
        added = False
        for kind, bucket in (
            (PreToolUseHook, self._pre),
            (PostToolUseHook, self._post),
            (SessionStartHook, self._session),
        ):
            if isinstance(hook, kind):
                bucket.append(hook)  # type: ignore[arg-type]
                bucket.sort(key=lambda h: h.priority)  # stable: ties keep registration order
                added = True
        if not added:
            raise TypeError(f"{hook!r} is not a PreToolUseHook, PostToolUseHook or SessionStartHook")
        return hook

    @property
    def has_pre(self) -> bool:
        return bool(self._pre)

    @property
    def has_post(self) -> bool:
        return bool(self._post)

    async def run_pre(self, ctx: HookContext) -> PreToolUseOutcome:
        """Run pre-hooks in order; rewritten args flow to the next hook; the first block wins."""
        args = ctx.tool_args
        modified = False
        for hook in self._pre:
            try:
                verdict = await hook.pre_tool_use(ctx)
            except RunSuspended:
                raise
            except Exception as exc:
                logger.warning(
                    "pre-tool-use hook %s raised %s; the call is blocked",
                    hook.hook_name,
                    type(exc).__name__,
                    extra={"tool_call_id": ctx.tool_call_id},
                )
                reason = f"the guard rail '{hook.hook_name}' failed, so the call was not made"
                return PreToolUseOutcome(False, args, modified, hook.hook_name, reason)
            if verdict is None:
                continue
            if not verdict.allow:
                reason = verdict.error or f"blocked by '{hook.hook_name}'"
                return PreToolUseOutcome(False, args, modified, hook.hook_name, reason)
            if verdict.modified_args is not None:
                args = verdict.modified_args
                modified = True
                ctx = replace(ctx, tool_args=args)
        return PreToolUseOutcome(True, args, modified)

    async def run_post(self, ctx: HookContext, result: ToolResult) -> ToolResult:
        """Run post-hooks in order; each sees the result as rewritten by the previous ones."""
        for hook in self._post:
            try:
                verdict = await hook.post_tool_use(ctx, result)
            except Exception as exc:
                logger.warning(
                    "post-tool-use hook %s raised %s; the observation is unchanged",
                    hook.hook_name,
                    type(exc).__name__,
                    extra={"tool_call_id": ctx.tool_call_id},
                )
                continue
            if verdict is not None and verdict.modified_result is not None:
                new = verdict.modified_result
                result = new if isinstance(new, ToolResult) else replace(result, content=new)
        return result

    async def run_session_start(self, ctx: SessionContext) -> list[str]:
        """Text that session-start hooks add to the system prompt, in priority order."""
        texts = []
        for hook in self._session:
            try:
                text = await hook.session_start(ctx)
            except Exception as exc:
                logger.warning(
                    "session-start hook %s raised %s; it adds nothing", hook.hook_name, type(exc).__name__
                )
                continue
            if text:
                texts.append(text)
        return texts


__all__ = [
    "HookContext",
    "HookRegistry",
    "HookResult",
    "PostToolUseHook",
    "PreToolUseHook",
    "PreToolUseOutcome",
    "SessionContext",
    "SessionStartHook",
]
