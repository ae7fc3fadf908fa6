"""A message posted over HTTP does what the websocket's ``message`` frame does: it starts a run, or, while
the conversation has an active run, it becomes that run's follow-up (acknowledged in the stream by an
``inject`` event). A cancel does what the websocket's ``cancel`` frame does.

Each action has a sync part (database work, in the request's thread) that returns a typed outcome, and an
async part that hands it to the process's run manager on the event loop, where the run lives on after
the request.
"""

from __future__ import annotations

import asyncio
import contextvars
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, Literal

from django.contrib.auth.base_user import AbstractBaseUser
from django.utils.translation import gettext as _

from agents import selectors, services
from agents.models import ACTIVE_RUN_STATUSES, Conversation, Run, RunStatus
from agents.runs import lifecycle
from agents.runs.control import CANCEL, FollowUp
from agents.runs.manager import run_manager


@dataclass(frozen=True, slots=True)
class RunToStart:
    """A new run was recorded for the message; :func:`message_deliver` launches it."""

    run_id: uuid.UUID
    conversation_id: uuid.UUID
    message_id: int
    type: Literal["started"] = "started"


@dataclass(frozen=True, slots=True)
class FollowUpToSend:
    """The message was stored as the active run's follow-up; :func:`message_deliver` sends it to the run."""

    run_id: uuid.UUID
    conversation_id: uuid.UUID
    message_id: int
    content: str
    type: Literal["follow_up"] = "follow_up"


MessagePosted = RunToStart | FollowUpToSend


def message_post(
    *, conversation: Conversation, user: AbstractBaseUser, content: object, language: str = ""
) -> MessagePosted:
    """Record ``content`` as a new run of ``conversation`` or as its active run's follow-up (sync);
    ``language``: the request's interface language, which a new run's stop messages are written in.

    Raises :class:`~agents.services.RunRefused` (empty or oversized message, agent unavailable, too many
    runs of the user).
    """
    text = services.message_content_check(content)
    for _attempt in range(3):
        try:
            start = lifecycle.run_start(
                conversation=conversation,
                user=user,  # type: ignore[arg-type]
                content=text,
                language=language,
            )
        except services.RunRefused as refused:
            if refused.code != "run_active":
                raise
            active = selectors.active_run_for_conversation(conversation_id=conversation.pk)
            if active is None:  # it finished between the two: start afresh
                continue
            message = services.message_add_follow_up(run_id=active.pk, content=text)
            return FollowUpToSend(active.pk, conversation.pk, message.pk, text)
        return RunToStart(start.run.pk, conversation.pk, start.message.pk)
    raise services.RunRefused("run_active", _("The agent is already answering in this conversation."))


async def message_deliver(posted: MessagePosted) -> None:
    """Launch the new run in this process, or deliver the follow-up to its run wherever it runs."""
    match posted:
        case RunToStart(run_id=run_id, conversation_id=conversation_id):
            await _outside_the_request(run_manager.launch(run_id, conversation_id=conversation_id))
        case FollowUpToSend(run_id=run_id, message_id=message_id, content=content):
            await run_manager.send_control(run_id, FollowUp(content, message_id))


async def _outside_the_request(launch: Coroutine[Any, Any, object]) -> None:
    """Await ``launch`` in a context of its own, so that the tasks it starts (the run, the manager's
    listener) do not inherit the request's context: under Django's ASGI handler it routes
    ``sync_to_async`` calls to the request's own threads, which are gone once the response is sent
    ("CurrentThreadExecutor already quit"). A websocket consumer has no such context.
    https://docs.python.org/3/library/asyncio-task.html#asyncio.create_task (``context``)"""
    await asyncio.get_running_loop().create_task(launch, context=contextvars.Context())


@dataclass(frozen=True, slots=True)
class CancelSent:
    """The run is working (here or in another process): a cancel goes to it; its stream ends with a
    ``done`` that says ``"cancelled": true``."""

    run_id: uuid.UUID
    type: Literal["sent"] = "sent"


@dataclass(frozen=True, slots=True)
class CancelDone:
    """The run was parked on an approval and is cancelled now (its ``done`` is stored)."""

    run_id: uuid.UUID
    type: Literal["done"] = "done"


@dataclass(frozen=True, slots=True)
class CancelRefused:
    """The run is not active: there is nothing to cancel."""

    run_id: uuid.UUID
    status: str
    type: Literal["refused"] = "refused"


CancelOutcome = CancelSent | CancelDone | CancelRefused


def run_cancel_prepare(*, run: Run) -> CancelOutcome:
    """Cancel a parked run at once; say a working run must be sent a cancel (sync)."""
    if run.status not in ACTIVE_RUN_STATUSES:
        return CancelRefused(run.pk, run.status)
    if run.status == RunStatus.PARKED and lifecycle.run_cancel_parked(run_id=run.pk):
        return CancelDone(run.pk)
    current = Run.objects.filter(pk=run.pk).values_list("status", flat=True).first()
    if current not in ACTIVE_RUN_STATUSES:
        return CancelRefused(run.pk, str(current))
    return CancelSent(run.pk)


async def run_cancel_deliver(outcome: CancelOutcome) -> None:
    if isinstance(outcome, CancelSent):
        await run_manager.send_control(outcome.run_id, CANCEL)
