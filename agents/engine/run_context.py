"""Who is running: the one description of a run that connectors and guard rails see.

A :class:`RunContext` is fixed for one run of one agent: the organisation, the user, the agent, the
conversation and the run. Plan mode adds the step (and round) whose tool calls the hooks are judging; a
durable run adds how long an approval may hold it in process before it parks. The engine passes it to
every hook (``HookContext.run``); the apps build their tools and guard rails from it.

``ReActAgent.run`` and ``PlanAgent.run`` take one, or a metadata mapping (the keys of
:meth:`RunContext.as_metadata`, plus whatever a caller adds) that :meth:`RunContext.of` reads into one,
keeping unknown keys in ``extra``; the loops, the tool runner and the plan executor carry it from there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

__all__ = ["RunContext"]


@dataclass(frozen=True, slots=True)
class RunContext:
    """The organisation, user, agent, conversation and run of one run (ids as the database has them).

    ``plan_step_id``/``plan_round``: the plan step making the call being judged (plan mode only).
    ``approval_hold_seconds``: how long an approval gate may wait in process before the run parks
    (``None``: no limit). ``extra``: anything else a caller put in the run's metadata.
    """

    org_id: int | None = None
    org_slug: str = ""
    user_id: int | None = None
    username: str = ""
    agent_id: str = ""
    agent_name: str = ""
    conversation_id: str = ""
    run_id: str = ""
    plan_step_id: str | None = None
    plan_round: int | None = None
    approval_hold_seconds: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @classmethod
    def of(cls, value: RunContext | Mapping[str, Any] | None) -> RunContext:
        """``value`` itself, or the context a metadata mapping describes (unknown keys in ``extra``)."""
        if isinstance(value, RunContext):
            return value
        if not value:
            return _EMPTY
        known: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, item in value.items():
            (known if key in _FIELDS else extra)[key] = item
        for key in _TEXT_FIELDS:
            if key in known:
                known[key] = "" if known[key] is None else str(known[key])
        if known.get("plan_step_id") is not None:
            known["plan_step_id"] = str(known["plan_step_id"])
        return cls(**known, extra=extra)

    def as_metadata(self) -> dict[str, Any]:
        """The context as a metadata mapping (what session-start hooks get): the identity fields, the plan
        step and the approval hold when set, and ``extra``."""
        data: dict[str, Any] = {
            "org_id": self.org_id,
            "org_slug": self.org_slug,
            "user_id": self.user_id,
            "username": self.username,
            "agent_id": self.agent_id,
            "agent_name": self.agent_name,
            "conversation_id": self.conversation_id,
            "run_id": self.run_id,
        }
        for key in ("plan_step_id", "plan_round", "approval_hold_seconds"):
            if getattr(self, key) is not None:
                data[key] = getattr(self, key)
        data.update(self.extra)
        return data

    def with_hold(self, seconds: float | None) -> RunContext:
        """This context with ``approval_hold_seconds`` set."""
        return replace(self, approval_hold_seconds=seconds)


_FIELDS = frozenset(f.name for f in fields(RunContext)) - {"extra"}
_TEXT_FIELDS = ("org_slug", "username", "agent_id", "agent_name", "conversation_id", "run_id")
_EMPTY = RunContext()
