"""The conversation commands and their results: typed values, the same for every entry point.

An entry point (the chat websocket, the HTTP chat, the OpenAI-compatible endpoint, the MCP endpoint)
turns its wire format into one of these commands, hands it to :mod:`agents.conversations.handling`, and
turns the result back into its wire format. Commands carry their context explicitly: who sends them
(:class:`Sender`: organisation, user, entry point, language) and the conversation they are about, which
the entry point has already found among the sender's own (the command layer checks it again).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import ClassVar, Literal

from django.contrib.auth.models import User
from django.utils.translation import gettext as _

from agents.models import Conversation

#: The entry point a command came through (logged with it).
Entry = Literal["websocket", "http", "openai", "mcp"]


@dataclass(frozen=True, slots=True)
class Sender:
    """Who sends a command: the user, in which organisation, through which entry point; ``language`` is
    their interface language (``""``: unknown), in which a run they start writes its stop messages."""

    organization_id: int
    user: User
    via: Entry
    language: str = ""


# -- commands ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PostMessage:
    """Post ``content`` to the conversation: it starts a run, or, while the conversation has an active
    run, it becomes that run's follow-up. With ``follow_up=False`` a busy conversation refuses it
    (``run_active``) instead: an MCP tool call is one run of its own."""

    sender: Sender
    conversation: Conversation
    content: object
    follow_up: bool = True
    # The sender's pending uploads sent with the message (agents.attachments): a new question only.
    attachment_ids: tuple[uuid.UUID | str, ...] = ()
    type: Literal["post_message"] = "post_message"


@dataclass(frozen=True, slots=True)
class Cancel:
    """Stop the conversation's active run (``run_id``: only if it is that run)."""

    sender: Sender
    conversation: Conversation
    run_id: uuid.UUID | None = None
    type: Literal["cancel"] = "cancel"


@dataclass(frozen=True, slots=True)
class Resume:
    """Resume the conversation's interrupted run (its lease lapsed) from its checkpoint, in this process
    (``run_id``: only if it is that run)."""

    sender: Sender
    conversation: Conversation
    run_id: uuid.UUID | None = None
    type: Literal["resume"] = "resume"


Command = PostMessage | Cancel | Resume


# -- results -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunStarted:
    """The message started a run (``message_id``: the stored question)."""

    run_id: uuid.UUID
    conversation_id: uuid.UUID
    message_id: int
    type: Literal["run_started"] = "run_started"


@dataclass(frozen=True, slots=True)
class FollowUpQueued:
    """The message is stored as the active run's follow-up and sent to it; the run takes it in at its next
    step (its stream shows it then), or, parked on an approval, when it resumes."""

    run_id: uuid.UUID
    conversation_id: uuid.UUID
    message_id: int
    type: Literal["follow_up_queued"] = "follow_up_queued"


@dataclass(frozen=True, slots=True)
class Refused:
    """Nothing changed: why (``code`` for programs, ``message`` translated for people)."""

    code: str
    message: str
    type: Literal["refused"] = "refused"


@dataclass(frozen=True, slots=True)
class CancelRequested:
    """The run is working (here or in another process): it was sent a cancel and ends with a ``done``
    that says ``"cancelled": true``."""

    run_id: uuid.UUID
    type: Literal["cancel_requested"] = "cancel_requested"


@dataclass(frozen=True, slots=True)
class Cancelled:
    """The run was parked on an approval and is cancelled now (its cancelled ``done`` is stored)."""

    run_id: uuid.UUID
    type: Literal["cancelled"] = "cancelled"


@dataclass(frozen=True, slots=True)
class NothingToCancel:
    """The conversation has no active run (or not the one named): nothing changed."""

    run_id: uuid.UUID | None = None
    type: Literal["nothing_to_cancel"] = "nothing_to_cancel"

    code: ClassVar[str] = "no_active_run"

    @property
    def message(self) -> str:
        return _("Nothing to cancel: the agent is not working.")


@dataclass(frozen=True, slots=True)
class RunResumed:
    """The interrupted run is running again in this process, from its checkpoint."""

    run_id: uuid.UUID
    type: Literal["run_resumed"] = "run_resumed"


PostResult = RunStarted | FollowUpQueued | Refused
CancelResult = CancelRequested | Cancelled | NothingToCancel | Refused
ResumeResult = RunResumed | Refused
Result = PostResult | CancelResult | ResumeResult


def nothing_to_resume() -> Refused:
    """The refusal of a resume when the conversation has no interrupted run to resume (or not the one
    named)."""
    return Refused("nothing_to_resume", _("There is no interrupted answer to resume here."))
