"""Facts the hooks of one run share: the guard-rail configuration each tool call was checked against,
and what the approval gate decided for each call."""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async

from hooks.call_config import CallGuardConfig, call_guard_config


@dataclass(frozen=True, slots=True)
class GateOutcome:
    """The approval gate's verdict on one tool call."""

    approval_id: str
    status: str  # approved, rejected, expired, cancelled
    decided_by: str = ""


@dataclass
class RunGuardState:
    """Per-run, per-tool-call facts: the guard rails read the call's configuration through it (once per
    call); the gate writes its verdicts, the audit hook reads (and forgets) them."""

    approvals: dict[str, GateOutcome] = field(default_factory=dict)
    # Per task (a call's pre-hooks run one after another in one task; plan steps, whose tool call ids
    # may repeat, each in their own), per tool call id.
    _configs: weakref.WeakKeyDictionary[
        asyncio.Task[Any], dict[str, asyncio.Future[CallGuardConfig | None]]
    ] = field(default_factory=weakref.WeakKeyDictionary)

    def take_approval(self, tool_call_id: str) -> GateOutcome | None:
        return self.approvals.pop(tool_call_id, None)

    async def call_config(
        self, organization_id: int | None, tool_call_id: str, connector_id: Any = None
    ) -> CallGuardConfig | None:
        """The organisation's guard-rail configuration for this call (of ``connector_id``'s action), read
        once for all the guard rails (``None``: the organisation no longer exists, or the run has none)."""
        if organization_id is None:
            return None  # no organisation: nothing to read (as for one that no longer exists)
        calls = self._calls() if tool_call_id else {}  # a call without an id cannot be told apart
        loading = calls.get(tool_call_id)
        if loading is None:
            loading = asyncio.ensure_future(sync_to_async(call_guard_config)(organization_id, connector_id))
            calls[tool_call_id] = loading
        return await asyncio.shield(loading)

    def forget_call(self, tool_call_id: str) -> None:
        """The call is over, or waited on a human: the next guard rail to ask reads afresh."""
        self._calls().pop(tool_call_id, None)

    def _calls(self) -> dict[str, asyncio.Future[CallGuardConfig | None]]:
        task = asyncio.current_task()
        if task is None:  # not in a task: nothing to share
            return {}
        return self._configs.setdefault(task, {})
