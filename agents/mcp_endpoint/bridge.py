"""One MCP tool call = one run of the agent, started and followed like a chat message.

The call starts a run as the calling user in a new conversation (or the one it names), through
:func:`agents.runs.lifecycle.run_start` and the process's :data:`~agents.runs.manager.run_manager`, exactly
as the chat websocket does: the same guard rails (hooks), the same call log, the same stored messages and
events. The bridge then follows the conversation's persisted event stream (the channel-layer group every
chat socket joins, with gaps and quiet spells filled from the database by ``seq``) and turns the run's
steps into progress reports until its ``done``. A client that cancels the call cancels the run.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

import anyio
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.contrib.auth import get_user_model
from django.utils import translation
from django.utils.translation import gettext as _

from agents import selectors, services
from agents.mcp_endpoint.caller import Caller
from agents.mcp_endpoint.progress import ProgressNarrator
from agents.mcp_endpoint.tools import AgentTool
from agents.models import Agent, Conversation, Run, RunStatus
from agents.runs import lifecycle
from agents.runs.events.store import conversation_group, events_after_sync, last_seq_sync
from agents.runs.manager import run_manager

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


@dataclass(frozen=True, slots=True)
class AgentCallRefused:
    """No run started: why (the chat's refusal codes, e.g. ``too_many_runs``, ``run_active``)."""

    code: str
    message: str


AgentCallOutcome = AgentAnswered | AgentCallRefused


@dataclass(frozen=True, slots=True)
class _Started:
    conversation_id: uuid.UUID
    run_id: uuid.UUID
    after_seq: int


async def agent_ask(
    *, caller: Caller, tool: AgentTool, question: Any, conversation_id: Any, report: Report
) -> AgentCallOutcome:
    """Run ``tool``'s agent on ``question`` as ``caller`` and return how the run ended."""
    # A run that is started is launched: a cancel arriving meanwhile takes effect once it runs.
    with anyio.CancelScope(shield=True):
        started = await database_sync_to_async(_run_start)(
            caller=caller, tool=tool, question=question, conversation_id=conversation_id
        )
        if isinstance(started, AgentCallRefused):
            return started
        await run_manager.launch(started.run_id, conversation_id=started.conversation_id)
    layer = get_channel_layer()
    group = conversation_group(started.conversation_id)
    channel: str | None = None
    try:
        if layer is not None:  # events before the subscription are read from the database (by seq)
            channel = await layer.new_channel("mcp.")
            await layer.group_add(group, channel)
        return await _follow(caller, started, layer, channel, report)
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            await _run_cancel(started)
        raise
    finally:
        if layer is not None and channel is not None:
            with anyio.CancelScope(shield=True):
                await layer.group_discard(group, channel)


def _run_start(
    *, caller: Caller, tool: AgentTool, question: Any, conversation_id: Any
) -> _Started | AgentCallRefused:
    """Find or create the conversation and start the run in it (sync: database)."""
    with translation.override(caller.language):
        user = get_user_model().objects.filter(pk=caller.user_id, is_active=True).first()
        if user is None:
            return AgentCallRefused("not_authenticated", _("The API key's user is not active."))
        conversation = _conversation_for(caller, tool, user, conversation_id)
        if isinstance(conversation, AgentCallRefused):
            return conversation
        try:
            after_seq = last_seq_sync(conversation.pk)
            start = lifecycle.run_start(conversation=conversation, user=user, content=question)
        except services.RunRefused as refused:
            return AgentCallRefused(refused.code, refused.message)
    return _Started(conversation.pk, start.run.pk, after_seq)


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


async def _follow(
    caller: Caller, started: _Started, layer: Any, channel: str | None, report: Report
) -> AgentAnswered:
    """Relay the run's steps to ``report`` until its ``done``; return how it ended."""
    narrator = ProgressNarrator(language=caller.language)
    after = started.after_seq
    run_id = str(started.run_id)
    while True:
        frames = await _next_frames(started, layer, channel, after)
        for frame in frames:
            seq = frame.get("seq")
            if not isinstance(seq, int) or seq <= after:
                continue
            after = seq
            if frame.get("run_id") != run_id:
                continue
            line = narrator.line_for(frame)
            if line is not None:
                await report(line)
            if frame.get("event") == "done":
                return await _ended(started, narrator, frame.get("data") or {})


async def _next_frames(
    started: _Started, layer: Any, channel: str | None, after: int
) -> list[dict[str, Any]]:
    """The next frames after ``after``: published ones, else (a gap, a quiet spell) the stored ones."""
    if layer is not None and channel is not None:
        try:
            message = await asyncio.wait_for(layer.receive(channel), timeout=QUIET_POLL_SECONDS)
        except TimeoutError:
            pass
        else:
            frames = message.get("frames") or ([message["frame"]] if "frame" in message else [])
            if not frames or frames[0].get("seq", 0) <= after + 1:
                return list(frames)
    else:
        await asyncio.sleep(QUIET_POLL_SECONDS / 4)
    return await database_sync_to_async(events_after_sync)(started.conversation_id, after)


async def _ended(started: _Started, narrator: ProgressNarrator, done: dict[str, Any]) -> AgentAnswered:
    status: Literal["done", "failed", "cancelled"] = "done"
    if done.get("cancelled"):
        status = "cancelled"
    elif narrator.error:
        status = "failed"
    answer = str(done.get("answer") or "")
    if status == "done" and not answer:  # the stored answer, should the frame have been trimmed
        answer = await database_sync_to_async(_stored_answer)(started.run_id)
    return AgentAnswered(answer, started.conversation_id, started.run_id, status, narrator.error)


def _stored_answer(run_id: uuid.UUID) -> str:
    return Run.objects.filter(pk=run_id).values_list("answer", flat=True).first() or ""


async def _run_cancel(started: _Started) -> None:
    """Stop the run the client gave up on, wherever it is (the chat's cancel, DESIGN section 4)."""
    local = run_manager.local_run_for(started.conversation_id)
    if local is not None:
        await run_manager.send_control(local, "cancel")
        return
    active = await database_sync_to_async(selectors.active_run_for_conversation)(
        conversation_id=started.conversation_id
    )
    if active is None or active.pk != started.run_id:
        return
    if active.status == RunStatus.PARKED and await database_sync_to_async(lifecycle.run_cancel_parked)(
        run_id=active.pk
    ):
        return
    await run_manager.send_control(active.pk, "cancel")
