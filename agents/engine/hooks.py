"""Hooks: deterministic code around every tool call that the model cannot talk its way past.

- :class:`PreToolUseHook` runs after the model chose a tool and before it runs. Its verdict
  (:mod:`agents.engine.verdicts`) is :class:`Allow`, :class:`Block` (the model sees the reason),
  :class:`Rewrite` (new arguments; the next hook sees them) or :class:`Park` (the whole run waits for
  something outside it, durable runs). It may await for a long time (a human approval); tool timeouts do
  not cover hooks.
- :class:`PostToolUseHook` runs after the call, before the model sees the observation: :class:`Allow`
  or :class:`Rewrite` of the result. It runs for EVERY call outcome, blocked and invalid calls included
  (``ctx.outcome`` and ``ctx.blocked_by`` say what happened), so an audit hook sees every attempt.
- :class:`SessionStartHook` runs once when a run starts and may add text to the system prompt.

Hooks run in ``priority`` order, lower first (ties keep registration order). The first block (or park)
wins. Guard rails fail closed: a pre-hook that raises, or returns something that is not a verdict,
blocks the call. A post-hook that raises leaves the result unchanged and is logged; a session-start hook
that raises adds nothing and is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from agents.engine.run_context import RunContext
from agents.engine.tool_context import ToolCallContext
from agents.engine.tools import ToolResult
from agents.engine.verdicts import ALLOW, Allow, Block, Park, PostVerdict, PreVerdict, Rewrite

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

    ``call`` is the call's :class:`~agents.engine.tool_context.ToolCallContext`, the one its tool gets:
    its name, id, iteration, run (:class:`~agents.engine.run_context.RunContext`: org, user, agent, run,
    plan step), idempotency key, whether it is replayed (a resumed run runs again a call that was
    pending when it stopped: a gate may find its earlier request for the same ``tool_call_id``) and, for
    post hooks, the configuration version the guard rails judged it under.
    ``tool_args`` are the arguments as rewritten so far (do not mutate them; return a :class:`Rewrite`).
    For post hooks, ``outcome`` is one of ``ok``, ``error``, ``timeout``, ``blocked``, ``invalid_args``,
    ``unknown_tool`` and ``blocked_by`` names the pre-hook that blocked the call.
    """

    call: ToolCallContext
    tool_args: Mapping[str, Any]
    outcome: str = OUTCOME_PENDING
    blocked_by: str | None = None

    @property
    def tool_name(self) -> str:
        return self.call.tool_name

    @property
    def tool_call_id(self) -> str:
        return self.call.tool_call_id

    @property
    def iteration(self) -> int:
        return self.call.iteration

    @property
    def run(self) -> RunContext:
        return self.call.run

    @property
    def replayed(self) -> bool:
        return self.call.replayed


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


_AnyHook = TypeVar("_AnyHook", bound=_Hook)


class PreToolUseHook(_Hook):
    """Runs before a tool call. Return :data:`ALLOW`, ``Block(reason)``, ``Rewrite(args)`` or
    ``Park(reason, details)``."""

    async def pre_tool_use(self, ctx: HookContext) -> PreVerdict:
        raise NotImplementedError


class PostToolUseHook(_Hook):
    """Runs after a tool call (any outcome). Return :data:`ALLOW`, or ``Rewrite(result)`` to change what
    the model sees."""

    async def post_tool_use(self, ctx: HookContext, result: ToolResult) -> PostVerdict:
        raise NotImplementedError


class SessionStartHook(_Hook):
    """Runs when a run starts; the returned text is added to the system prompt."""

    async def session_start(self, ctx: SessionContext) -> str | None:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class PreToolUseOutcome:
    """The combined verdict of all pre-hooks for one call, and its arguments as the hooks left them.

    ``verdict`` is :class:`Allow` (no hook changed the arguments), :class:`Rewrite` (some did),
    :class:`Block` (naming the hook) or :class:`Park`. ``config_version``: the configuration version the
    hooks pinned for the call (the last hook's that pinned one; ``None``: none did).
    """

    verdict: PreVerdict
    args: Mapping[str, Any]
    config_version: int | None = None

    @property
    def allowed(self) -> bool:
        """The call may run (no hook blocked or parked it)."""
        return isinstance(self.verdict, Allow | Rewrite)

    @property
    def args_modified(self) -> bool:
        return isinstance(self.verdict, Rewrite)

    @property
    def blocked_by(self) -> str | None:
        return self.verdict.hook if isinstance(self.verdict, Block) else None

    @property
    def reason(self) -> str | None:
        """Why the call was blocked (``None`` when it was not)."""
        return self.verdict.reason if isinstance(self.verdict, Block) else None


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
        if not isinstance(hook, (PreToolUseHook, PostToolUseHook, SessionStartHook)):
            raise TypeError(f"{hook!r} is not a PreToolUseHook, PostToolUseHook or SessionStartHook")
        if isinstance(hook, PreToolUseHook):
            _add_by_priority(self._pre, hook)
        if isinstance(hook, PostToolUseHook):
            _add_by_priority(self._post, hook)
        if isinstance(hook, SessionStartHook):
            _add_by_priority(self._session, hook)
        return hook

    @property
    def has_pre(self) -> bool:
        return bool(self._pre)

    @property
    def has_post(self) -> bool:
        return bool(self._post)

    async def run_pre(self, ctx: HookContext) -> PreToolUseOutcome:
        """Run pre-hooks in order; rewritten args flow to the next hook; the first block or park wins."""
        rewritten = False
        pinned: int | None = None
        for hook in self._pre:
            try:
                verdict = await hook.pre_tool_use(ctx)
            except Exception as exc:
                logger.warning(
                    "pre-tool-use hook %s raised %s; the call is blocked",
                    hook.hook_name,
                    type(exc).__name__,
                    extra={"tool_call_id": ctx.tool_call_id},
                )
                return PreToolUseOutcome(_failed(hook), ctx.tool_args)
            match verdict:
                case Allow(config_version=version):
                    if version is not None:
                        pinned = version
                    continue
                case Block(reason=reason):
                    blocked = Block(reason or f"blocked by '{hook.hook_name}'", hook.hook_name)
                    return PreToolUseOutcome(blocked, ctx.tool_args)
                case Park():
                    return PreToolUseOutcome(verdict, ctx.tool_args)
                case Rewrite(value=args):
                    rewritten = True
                    ctx = replace(ctx, tool_args=args)
                case _:
                    logger.warning(
                        "pre-tool-use hook %s returned %s, not a verdict; the call is blocked",
                        hook.hook_name,
                        type(verdict).__name__,
                        extra={"tool_call_id": ctx.tool_call_id},
                    )
                    return PreToolUseOutcome(_failed(hook), ctx.tool_args)
        verdict = Rewrite(ctx.tool_args) if rewritten else ALLOW
        return PreToolUseOutcome(verdict, ctx.tool_args, pinned)

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
            if isinstance(verdict, Rewrite):
                new = verdict.value
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


def _add_by_priority(bucket: list[_AnyHook], hook: _AnyHook) -> None:
    bucket.append(hook)
    bucket.sort(key=lambda h: h.priority)  # stable: ties keep registration order


def _failed(hook: _Hook) -> Block:
    reason = f"the guard rail '{hook.hook_name}' failed, so the call was not made"
    return Block(reason, hook.hook_name)


__all__ = [
    "ALLOW",
    "Allow",
    "Block",
    "HookContext",
    "HookRegistry",
    "Park",
    "PostVerdict",
    "PreVerdict",
    "Rewrite",
    "PostToolUseHook",
    "PreToolUseHook",
    "PreToolUseOutcome",
    "SessionContext",
    "SessionStartHook",
    "ToolCallContext",
]
