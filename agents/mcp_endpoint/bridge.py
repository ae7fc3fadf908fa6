"""One MCP tool call = one run of the agent, started and followed like a chat message.

The call starts a run as the calling user in a new conversation (or the one it names) through the
conversation command layer (:mod:`agents.conversations`), exactly as the chat websocket does: the same
guard rails (hooks), the same call log, the same stored messages and events. A call is one run of its own:
a conversation that is still answering refuses it (``run_active``) rather than taking it as a follow-up.
The call's files (its ``attachments``: :mod:`agents.mcp_endpoint.attachments`) are stored as the caller's
uploads and sent with the question; a refused question takes them, and a conversation it created, away
again. The bridge then follows the conversation's persisted event stream (the channel-layer group every
chat socket joins, with gaps and quiet spells filled from the database by ``seq``) and turns the run's
steps into progress reports until its ``done``. A client that cancels the call cancels the run (a
``Cancel`` command).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

import anyio
from channels.db import database_sync_to_async
from django.contrib.auth import get_user_model
from django.utils import translation
from django.utils.translation import gettext as _

from agents import selectors, services
from agents.chat_http.follow import HEARTBEAT, run_frames
from agents.conversations.commands import Cancel, PostMessage, PostResult, Refused, Sender
from agents.conversations.handling import Recorded, command_deliver, command_handle, command_record
from agents.mcp_endpoint.attachments import (
    CallFilesRefused,
    call_files_discard,
    call_files_parse,
    call_files_store,
)
from agents.mcp_endpoint.caller import Caller
from agents.mcp_endpoint.progress import ProgressNarrator
from agents.mcp_endpoint.tools import AgentTool
from agents.models import Agent, Conversation
from agents.runs import addressed
from agents.runs.events.store import last_seq_sync

#: Seconds without a published event after which the bridge reads the stream from the database (a run
#: parked on an approval and resumed by a worker, or a message the channel layer dropped).
QUIET_POLL_SECONDS = 2.0

Report = Callable[[str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class AgentAnswered:
    """The run ended: its answer (empty unless done), where it is stored, and how it ended."""

    answer: str
    conversation_id: uuid.UUID
    run_id: uuid.UUID
    status: Literal["done", "failed", "cancelled"]
    error: str = ""
    citations: tuple[dict[str, Any], ...] = ()  # the sources the answer cites, by number


@dataclass(frozen=True, slots=True)
class AgentCallRefused:
    """No run started: why (the chat's refusal codes, e.g. ``too_many_runs``, ``run_active``)."""

    code: str
    message: str


AgentCallOutcome = AgentAnswered | AgentCallRefused


@dataclass(frozen=True, slots=True)
class _Started:
    sender: Sender
    conversation: Conversation
    run_id: uuid.UUID
    after_seq: int
    recorded: Recorded[PostResult]

    @property
    def conversation_id(self) -> uuid.UUID:
        return self.conversation.pk


async def agent_ask(
    *,
    caller: Caller,
    tool: AgentTool,
    question: Any,
    conversation_id: Any,
    report: Report,
    attachments: Any = None,
) -> AgentCallOutcome:
    """Run ``tool``'s agent on ``question`` (with the files of ``attachments``, the call's argument: see
    :mod:`agents.mcp_endpoint.attachments`) as ``caller`` and return how the run ended."""
    # A run that is started is launched: a cancel arriving meanwhile takes effect once it runs.
    with anyio.CancelScope(shield=True):
        started = await database_sync_to_async(_run_start)(
            caller=caller,
            tool=tool,
            question=question,
            conversation_id=conversation_id,
            attachments=attachments,
        )
        if isinstance(started, AgentCallRefused):
            return started
        await command_deliver(started.recorded)
    try:
        return await _follow(caller, started, report)
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            await _run_cancel(started)
        raise


def _run_start(
    *, caller: Caller, tool: AgentTool, question: Any, conversation_id: Any, attachments: Any = None
) -> _Started | AgentCallRefused:
    """Find or create the conversation, store the call's files and start the run in it (sync: database,
    outside any transaction). A refused call leaves nothing behind: not its files, nor the conversation
    it created."""
    with translation.override(caller.language):
        user = get_user_model().objects.filter(pk=caller.user_id, is_active=True).first()
        if user is None:
            return AgentCallRefused("not_authenticated", _("The API key's user is not active."))
        files = call_files_parse(attachments)
        if isinstance(files, CallFilesRefused):
            return AgentCallRefused(files.code, files.message)
        conversation = _conversation_for(caller, tool, user, conversation_id)
        if isinstance(conversation, AgentCallRefused):
            return conversation
        created = conversation_id in (None, "")
        stored = call_files_store(organization=conversation.organization, user=user, files=files)
        if isinstance(stored, CallFilesRefused):
            _forget(conversation, created)
            return AgentCallRefused(stored.code, stored.message)
        sender = Sender(
            organization_id=caller.organization_id, user=user, via="mcp", language=caller.interface_language
        )
        after_seq = last_seq_sync(conversation.pk)
        recorded = command_record(
            PostMessage(sender, conversation, question, follow_up=False, attachment_ids=stored.attachment_ids)
        )
        if isinstance(recorded.result, Refused):
            call_files_discard(organization_id=caller.organization_id, user=user, stored=stored.stored)
            _forget(conversation, created)
            return AgentCallRefused(recorded.result.code, recorded.result.message)
    return _Started(sender, conversation, recorded.result.run_id, after_seq, recorded)


def _forget(conversation: Conversation, created: bool) -> None:
    """Delete the conversation this call created for a question that was then refused."""
    if created:
        services.conversation_delete(conversation=conversation)


def _conversation_for(
    caller: Caller, tool: AgentTool, user: Any, conversation_id: Any
) -> Conversation | AgentCallRefused:
    if conversation_id in (None, ""):
        agent = tool_agent(caller, tool)
        if agent is None:
            return AgentCallRefused("agent_unavailable", _("This agent is not available."))
        try:
            return services.conversation_create(organization=agent.organization, user=user, agent=agent)
        except services.RunRefused as refused:
            return AgentCallRefused(refused.code, refused.message)
    conversation = selectors.conversation_for_user(user=user, conversation_id=str(conversation_id))
    if (
        conversation is None
        or conversation.organization_id != caller.organization_id
        or conversation.agent_id != tool.agent_id
    ):
        return AgentCallRefused(
            "conversation_not_found", _("There is no such conversation of yours with this agent.")
        )
    return conversation


def tool_agent(caller: Caller, tool: AgentTool) -> Agent | None:
    """The tool's agent, if it is still active and exposed in the caller's organisation (sync)."""
    return (
        Agent.objects.select_related("organization")
        .filter(pk=tool.agent_id, organization_id=caller.organization_id, active=True, exposed_over_mcp=True)
        .first()
    )


async def _follow(caller: Caller, started: _Started, report: Report) -> AgentAnswered:
    """Relay the run's steps to ``report`` until its ``done``; return how it ended. The frames come as
    the HTTP chat's stream reads them (:func:`~agents.chat_http.follow.run_frames`: stored, then live, a
    gap filled from the store)."""
    narrator = ProgressNarrator(language=caller.language)
    citations: dict[int, dict[str, Any]] = {}
    frames = run_frames(
        conversation_id=started.conversation_id,
        run_id=started.run_id,
        after_seq=started.after_seq,
        heartbeat=QUIET_POLL_SECONDS,
    )
    try:
        async for frame in frames:
            if frame is HEARTBEAT:
                continue
            assert isinstance(frame, dict)
            line = narrator.line_for(frame)
            if line is not None:
                await report(line)
            citations.update(frame_citations(frame))
            if frame.get("event") == "done":
                return await _ended(started, narrator, frame.get("data") or {}, citations)
    finally:
        with anyio.CancelScope(shield=True):  # leave the conversation's group even when cancelled
            await frames.aclose()
    # the run ended without a stored done: its stored answer
    return await _ended(started, narrator, {}, citations)


def frame_citations(frame: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """The citations a step frame carries (a knowledge-base search's done step), by number."""
    if frame.get("event") != "step":
        return {}
    found = (frame.get("data") or {}).get("citations") or ()
    return {c["number"]: c for c in found if isinstance(c, dict) and isinstance(c.get("number"), int)}


async def _ended(
    started: _Started, narrator: ProgressNarrator, done: dict[str, Any], citations: dict[int, dict[str, Any]]
) -> AgentAnswered:
    status: Literal["done", "failed", "cancelled"] = "done"
    if done.get("cancelled"):
        status = "cancelled"
    elif narrator.error:
        status = "failed"
    answer = str(done.get("answer") or "")
    if status == "done" and not answer:  # the stored answer, should the frame have been trimmed
        answer = await database_sync_to_async(_stored_answer)(started.run_id)
    return AgentAnswered(
        answer,
        started.conversation_id,
        started.run_id,
        status,
        narrator.error,
        tuple(citations[number] for number in sorted(citations)),
    )


def _stored_answer(run_id: uuid.UUID) -> str:
    return addressed.runs().filter(pk=run_id).values_list("answer", flat=True).first() or ""


async def _run_cancel(started: _Started) -> None:
    """Stop the run the client gave up on, wherever it is (a ``Cancel`` command, as the chat's)."""
    await command_handle(Cancel(started.sender, started.conversation, started.run_id))
