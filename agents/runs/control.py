"""The control messages a run receives, wherever it runs: a follow-up to take in, or a cancel.

A control message reaches a run of this process directly (:meth:`~agents.runs.manager.RunManager.send_control`)
and a run of another process through the run's channel-layer group (:func:`~agents.runs.events.store.run_group`).
This module alone turns them into channel-layer messages and back, strictly: anything else a group
carries is refused, not guessed at.

The wire format is the one older processes speak, so processes of both versions work side by side during
a rolling upgrade: ``{"type": "run.control", "run_id": "<uuid>", "action": "interrupt" | "cancel",
"content": "...", "message_id": <int> | null}``. A follow-up travels as the action ``"interrupt"`` (its
old name); ``"follow_up"`` is read too, so a later version may send it once no older process remains.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

#: The channel-layer message type of every control message (``RunManager._listen`` receives it).
CONTROL_MESSAGE_TYPE: Final = "run.control"
#: The action a follow-up is sent as (read: also ``"follow_up"``).
FOLLOW_UP_ACTION: Final = "interrupt"
CANCEL_ACTION: Final = "cancel"
_FOLLOW_UP_ACTIONS: Final = frozenset({FOLLOW_UP_ACTION, "follow_up"})


@dataclass(frozen=True, slots=True)
class FollowUp:
    """A message the user sent while the run works: the run takes it in at its next step.

    ``message_id``: its stored :class:`~agents.models.Message`, so a run that already loaded it from the
    database (a resumed run) does not take it twice.
    """

    content: str
    message_id: int | None = None
    type: Literal["follow_up"] = "follow_up"


@dataclass(frozen=True, slots=True)
class CancelRun:
    """Stop the run; it ends with a ``done`` that says it was cancelled."""

    type: Literal["cancel"] = "cancel"


RunControl = FollowUp | CancelRun

CANCEL: Final = CancelRun()


@dataclass(frozen=True, slots=True)
class ControlFor:
    """A control message read from the channel layer, and the run it is for."""

    run_id: uuid.UUID
    control: RunControl
    type: Literal["control"] = "control"


@dataclass(frozen=True, slots=True)
class ControlRefused:
    """A channel-layer message that is not a valid control message: why (for the log)."""

    reason: str
    type: Literal["refused"] = "refused"


def control_message(run_id: uuid.UUID, control: RunControl) -> dict[str, Any]:
    """The channel-layer message that carries ``control`` to ``run_id``'s group."""
    match control:
        case FollowUp(content=content, message_id=message_id):
            action, text, message = FOLLOW_UP_ACTION, content, message_id
        case CancelRun():
            action, text, message = CANCEL_ACTION, "", None
    return {
        "type": CONTROL_MESSAGE_TYPE,
        "run_id": str(run_id),
        "action": action,
        "content": text,
        "message_id": message,
    }


def control_parse(message: Mapping[str, Any]) -> ControlFor | ControlRefused:
    """The control message ``message`` carries, or why it carries none."""
    if message.get("type") != CONTROL_MESSAGE_TYPE:
        return ControlRefused("not a control message")
    try:
        run_id = uuid.UUID(str(message.get("run_id")))
    except ValueError:
        return ControlRefused("no valid run_id")
    action = message.get("action")
    if action == CANCEL_ACTION:
        return ControlFor(run_id, CANCEL)
    if action not in _FOLLOW_UP_ACTIONS:
        return ControlRefused(f"unknown action {str(action)[:40]!r}")
    content, message_id = message.get("content"), message.get("message_id")
    if not isinstance(content, str):
        return ControlRefused("a follow-up without text")
    if message_id is not None and (not isinstance(message_id, int) or isinstance(message_id, bool)):
        return ControlRefused("a follow-up with an invalid message_id")
    return ControlFor(run_id, FollowUp(content, message_id))
