"""The identity of one tool call, handed explicitly to its hooks and to its tool.

The tool runner builds one :class:`ToolCallContext` per call of a batch, before the call's pre-hooks
run, and hands it on as an argument: to every hook (``HookContext.call``) and to the tool
(``Tool.execute(ctx, **arguments)``). Nothing about a call travels through a context variable or a
module-level table, so two calls running at once each see their own context and nothing of one is seen
by the next.

A pre-hook that read the organisation's configuration for the call may pin the version it judged the
call under (``Allow(config_version=...)``, :mod:`agents.engine.verdicts`): the runner then hands the tool
the context with that :attr:`ToolCallContext.config_version`, so the tool acts on the configuration the
guard rails judged, and the post-hooks see it too.

This module is part of the engine's public protocol: the apps' tools and hooks import it (with
:mod:`agents.engine.tools`, :mod:`agents.engine.hooks` and :mod:`agents.engine.run_context`), never the
runner or the loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from agents.engine.run_context import RunContext

__all__ = ["ToolCallContext", "idempotency_key"]


def idempotency_key(run_id: object, tool_call_id: str) -> str:
    """The key a tool call of a run carries: ``<run_id>:<tool_call_id>`` (the run's tool ledger records the
    call under it, so a resumed run never makes it twice)."""
    return f"{run_id}:{tool_call_id}"


@dataclass(frozen=True, slots=True)
class ToolCallContext:
    """One tool call as its hooks and its tool see it.

    ``run``: who is running (organisation, user, agent, conversation, run and, in plan mode, the step and
    round making the call). ``tool_call_id``: the model's id of the call. ``iteration``: the loop's
    iteration that made it. ``replayed``: a resumed run runs again a call that was pending when it
    stopped. ``config_version``: the organisation's configuration version the guard rails judged the call
    under (``None`` before the pre-hooks, or when none pinned one).
    """

    tool_name: str
    tool_call_id: str
    iteration: int = 0
    run: RunContext = field(default_factory=RunContext)
    replayed: bool = False
    config_version: int | None = None

    @property
    def idempotency_key(self) -> str | None:
        """``<run_id>:<tool_call_id>`` when the run has an id (``None`` outside a run): the run's tool ledger
        records the call under it, and a connector sends it with a write."""
        run_id = self.run.run_id
        return idempotency_key(run_id, self.tool_call_id) if run_id else None

    @property
    def org_id(self) -> int | None:
        """The organisation the call is made for."""
        return self.run.org_id

    @property
    def user_id(self) -> int | None:
        """The user the run acts for."""
        return self.run.user_id

    @property
    def run_id(self) -> str:
        """The run making the call (``""`` outside a run)."""
        return self.run.run_id

    @property
    def plan_step_id(self) -> str | None:
        """The plan step making the call (plan mode only)."""
        return self.run.plan_step_id

    def with_config_version(self, version: int | None) -> ToolCallContext:
        """This context with the configuration version the guard rails judged the call under."""
        return self if version == self.config_version else replace(self, config_version=version)
