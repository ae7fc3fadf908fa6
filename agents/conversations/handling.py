"""One way into a conversation's runs: every entry point's commands are handled here, and only here.

A command is handled in two halves:

- :func:`command_record` (sync, database) decides what the command does and records it: a new run
  (taken under a lease for this process at once), a stored follow-up, a parked run cancelled, an
  interrupted run claimed back. It returns a :class:`Recorded`: the typed result, and what is left to
  hand to the run manager.
- :func:`command_deliver` (async, on the event loop) hands that over: it launches the run in this
  process's :data:`~agents.runs.manager.run_manager`, or sends the run a control message
  (:mod:`agents.runs.control`) wherever it runs.

:func:`command_handle` does both (the database half in a thread). An HTTP view runs the first half in
its request's thread, so that a refusal becomes its error response, and the second on the loop.

Every result is logged (DEBUG, logger ``agents.conversations.handling``) with the entry point it came
through (``via``), the typed result itself (``conversation_result``), ``org_id`` and ``run_id``; never
the message's text.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, overload

from channels.db import database_sync_to_async
from django.utils.translation import gettext as _

from agents import selectors, services
from agents.conversations.attachments import attachments_refusal, attachments_with_follow_up
from agents.conversations.commands import (
    Cancel,
    Cancelled,
    CancelRequested,
    CancelResult,
    Command,
    FollowUpQueued,
    NothingToCancel,
    PostMessage,
    PostResult,
    Refused,
    Result,
    Resume,
    ResumeResult,
    RunResumed,
    RunStarted,
    nothing_to_resume,
)
from agents.models import Run, RunStatus
from agents.runs import lifecycle
from agents.runs.control import CANCEL, FollowUp, RunControl
from agents.runs.leases import lease_owner_new
from agents.runs.manager import run_manager

logger = logging.getLogger(__name__)

R = TypeVar("R", bound=Result)

#: How often a message tries to start a run when the conversation's run ends just as it arrives.
START_ATTEMPTS = 3


@dataclass(frozen=True, slots=True)
class Launch:
    """Start the run's task in this process (``started``: a new run's start; ``resume``: from its
    checkpoint), under the lease its record took for ``owner``."""

    run_id: uuid.UUID
    conversation_id: uuid.UUID
    owner: str
    started: lifecycle.RunStart | None = None
    resume: bool = False


@dataclass(frozen=True, slots=True)
class SendControl:
    """Send the run a control message, wherever it runs."""

    run_id: uuid.UUID
    control: RunControl


Delivery = Launch | SendControl


@dataclass(frozen=True, slots=True)
class Recorded(Generic[R]):
    """A command recorded: its result, and what :func:`command_deliver` must still hand to the run
    manager (``None``: nothing)."""

    result: R
    delivery: Delivery | None = None


# -- the database half -------------------------------------------------------------------------------


@overload
def command_record(command: PostMessage) -> Recorded[PostResult]: ...
@overload
def command_record(command: Cancel) -> Recorded[CancelResult]: ...
@overload
def command_record(command: Resume) -> Recorded[ResumeResult]: ...
def command_record(command: Command) -> Recorded[Any]:
    """Decide and record what ``command`` does (sync: database); :func:`command_deliver` finishes it."""
    refused = _foreign(command)
    if refused is not None:
        recorded: Recorded[Any] = Recorded(refused)
    else:
        match command:
            case PostMessage():
                recorded = _post(command)
            case Cancel():
                recorded = _cancel(command)
            case Resume():
                recorded = _resume(command)
    _log(command, recorded.result)
    return recorded


def _foreign(command: Command) -> Refused | None:
    """A conversation that is not the sender's own, in the sender's organisation: refused. (The entry
    point looked it up among the sender's; this is the check that cannot be forgotten.)"""
    conversation, sender = command.conversation, command.sender
    if conversation.organization_id != sender.organization_id or conversation.user_id != sender.user.pk:
        return Refused("conversation_not_found", _("There is no such conversation of yours."))
    return None


def _post(command: PostMessage) -> Recorded[PostResult]:
    try:
        text = services.message_content_check(command.content)
    except services.RunRefused as refused:
        return Recorded(Refused(refused.code, refused.message))
    conversation = command.conversation
    if command.attachment_ids:
        unfit = attachments_refusal(command)
        if unfit is not None:
            return Recorded(unfit)
    for _attempt in range(START_ATTEMPTS):
        # Most messages start a run: try that first; the database's own constraint refuses it while the
        # conversation has an active run, and the message then joins that run.
        owner = lease_owner_new()  # the run's lease is taken by its start, for this process's task
        try:
            start = lifecycle.run_start(
                conversation=conversation,
                user=command.sender.user,
                content=text,
                owner=owner,
                language=command.sender.language,
                attachment_ids=command.attachment_ids,
            )
        except services.RunRefused as refused:
            if command.attachment_ids and refused.code == "run_active":
                return Recorded(attachments_with_follow_up())
            if not command.follow_up or command.attachment_ids:
                return Recorded(Refused(refused.code, refused.message))
            active = selectors.active_run_for_conversation(conversation=conversation)
            if active is None:
                if refused.code != "run_active":
                    return Recorded(Refused(refused.code, refused.message))
                continue  # the run ended between the two: start afresh
            # A busy conversation takes the message in, whatever else would refuse a new run (the user's
            # run limit, an agent switched off meanwhile): it is not a new run.
            message = services.message_add_follow_up(run=active, content=text)
            return Recorded(
                FollowUpQueued(active.pk, conversation.pk, message.pk),
                SendControl(active.pk, FollowUp(text, message.pk)),
            )
        return Recorded(
            RunStarted(start.run.pk, conversation.pk, start.message.pk),
            Launch(start.run.pk, conversation.pk, owner, started=start),
        )
    return Recorded(Refused("run_active", _("The agent is already answering in this conversation.")))


def _cancel(command: Cancel) -> Recorded[CancelResult]:
    active = _active_run(command)
    if active is None:
        return Recorded(NothingToCancel(command.run_id))
    if active.status == RunStatus.PARKED:
        if lifecycle.run_cancel_parked(run_id=active.pk):
            return Recorded(Cancelled(active.pk))
        # It left the parking meanwhile: resumed (then it is running and is sent the cancel), or ended.
        active = _active_run(command)
        if active is None:
            return Recorded(NothingToCancel(command.run_id))
    return Recorded(CancelRequested(active.pk), SendControl(active.pk, CANCEL))


def _active_run(command: Cancel) -> Run | None:
    active = selectors.active_run_for_conversation(conversation=command.conversation)
    if active is None or (command.run_id is not None and active.pk != command.run_id):
        return None
    return active


def _resume(command: Resume) -> Recorded[ResumeResult]:
    conversation = command.conversation
    run = selectors.run_to_resume(conversation=conversation, run_id=command.run_id)
    if run is None:
        return Recorded(nothing_to_resume())
    owner = lease_owner_new()
    try:
        claimed = lifecycle.run_resume(run_id=run.pk, owner=owner)
    except services.RunRefused as refused:
        return Recorded(Refused(refused.code, refused.message))
    if not claimed:
        return Recorded(Refused("nothing_to_resume", _("This answer is already being resumed.")))
    return Recorded(RunResumed(run.pk), Launch(run.pk, conversation.pk, owner, resume=True))


# -- the event-loop half -------------------------------------------------------------------------------


async def command_deliver(recorded: Recorded[R]) -> R:
    """Hand what :func:`command_record` recorded to the run manager; return the command's result."""
    match recorded.delivery:
        case Launch() as launch:
            await _apart(
                run_manager.launch(
                    launch.run_id,
                    owner=launch.owner,
                    conversation_id=launch.conversation_id,
                    started=launch.started,
                    resume=launch.resume,
                )
            )
        case SendControl(run_id=run_id, control=control):
            await run_manager.send_control(run_id, control)
    return recorded.result


async def _apart(launch: Coroutine[Any, Any, object]) -> None:
    """Await ``launch`` in a context of its own: the run belongs to the process, not to the entry point,
    so the tasks it starts (the run, the manager's listener) must not inherit the entry point's context.
    Under Django's ASGI handler that context routes ``sync_to_async`` calls to the request's own threads,
    which are gone once the response is sent ("CurrentThreadExecutor already quit").
    https://docs.python.org/3/library/asyncio-task.html#asyncio.create_task (``context``)"""
    await asyncio.get_running_loop().create_task(launch, context=contextvars.Context())


@overload
async def command_handle(command: PostMessage) -> PostResult: ...
@overload
async def command_handle(command: Cancel) -> CancelResult: ...
@overload
async def command_handle(command: Resume) -> ResumeResult: ...
async def command_handle(command: Command) -> Result:
    """Handle ``command`` from an async entry point: record it (in a database thread), then deliver it."""
    if isinstance(command, Cancel) and _foreign(command) is None:
        # A run working in this process is stopped at once, without a database round trip.
        local = run_manager.local_run_for(command.conversation.pk)
        if local is not None and command.run_id in (None, local):
            result = CancelRequested(local)
            _log(command, result)
            await run_manager.send_control(local, CANCEL)
            return result
    recorded: Recorded[Any] = await database_sync_to_async(command_record)(command)
    return await command_deliver(recorded)


def _log(command: Command, result: Result) -> None:
    run_id = getattr(result, "run_id", None)
    logger.debug(
        "conversation command %s via %s: %s",
        command.type,
        command.sender.via,
        result.type,
        extra={
            "org_id": command.sender.organization_id,
            "conversation_id": str(command.conversation.pk),
            "run_id": str(run_id) if run_id is not None else None,
            "via": command.sender.via,
            "conversation_command": command.type,
            "conversation_result": result,
        },
    )
