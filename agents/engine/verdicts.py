"""A hook's verdict on one tool call: one of :class:`Allow`, :class:`Block`, :class:`Rewrite`, :class:`Park`.

Each is a frozen dataclass, so a verdict is exactly one thing (a call cannot be blocked and rewritten at
once). A pre-tool-use hook returns a :data:`PreVerdict`; a post-tool-use hook a :data:`PostVerdict`
(allow, or rewrite the result the model sees). The tool-guardrail behaviours of openai-agents-python
(allow, reject the content, raise) are the model for this shape:
https://openai.github.io/openai-agents-python/ref/tool_guardrails
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from agents.engine.tools import ToolResult

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Allow:
    """Let the call go on unchanged.

    ``config_version``: a pre-hook that judged the call against the organisation's configuration as read
    for it pins that version; the tool runner hands the tool (and the post-hooks) the call's
    :class:`~agents.engine.tool_context.ToolCallContext` with it, so the tool acts on the configuration
    the guard rails judged (``None``: pins nothing).
    """

    config_version: int | None = None


@dataclass(frozen=True, slots=True)
class Block:
    """Refuse the call; the model sees ``reason``. ``hook`` names the hook that blocked it (filled in by
    the :class:`~agents.engine.hooks.HookRegistry`)."""

    reason: str
    hook: str = ""


@dataclass(frozen=True, slots=True)
class Rewrite(Generic[T]):
    """Change the call: a pre-hook's new arguments (the next hook sees them), or a post-hook's new result
    (a :class:`~agents.engine.tools.ToolResult`, or a string that replaces its content)."""

    value: T


@dataclass(frozen=True, slots=True)
class Park:
    """Park the whole run until something outside it happens (a human decision that will take long).

    ``reason`` says why (``"approval"``); ``details`` are JSON values the host keeps with the parked run
    (the approval id it waits for). The turn's calls stay pending in the run's last checkpoint, so the
    run resumes exactly there.
    """

    reason: str
    details: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, **self.details}


#: The plain :class:`Allow` (it pins nothing).
ALLOW = Allow()

PreVerdict = Allow | Block | Rewrite[Mapping[str, Any]] | Park
PostVerdict = Allow | Rewrite[ToolResult | str]

__all__ = ["ALLOW", "Allow", "Block", "Park", "PostVerdict", "PreVerdict", "Rewrite"]
