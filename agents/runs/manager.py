"""Runs live in tasks owned by the process, not by a socket.

``RunManager`` (one per process) starts a run's task, keeps it by run id, and receives the control
messages (:mod:`agents.runs.control`: a follow-up, a cancel) that the conversation command layer
(:mod:`agents.conversations`) of any process sends to the run's channel-layer group. A disconnecting browser does not stop a run; its events keep being persisted and
published.

Durable runs: the manager holds each of its runs through a lease (:mod:`agents.runs.leases`), renewed by the
run's event writes and, for quiet runs, every few seconds; the engine checkpoints after every iteration
through the run's event sink; tool calls go through the database ledger. ``launch(resume=True)``
continues a run from its checkpoint (an interrupted run the user resumes, or a parked run whose
decision arrived, in a Celery worker). A run whose approval takes longer than the in-process hold is
parked: its task ends, and it resumes on the decision. A run whose lease was taken from this process
(it was too slow to renew it and was declared interrupted) stops at once and records nothing more.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from agents import runtime
from agents.engine import events, tracing
from agents.engine.context_summary import is_summary_message
from agents.engine.follow_ups import FollowUpQueue
from agents.engine.hooks import HookRegistry
from agents.engine.llm import Usage
from agents.engine.plan.agent import PlanAgent
from agents.engine.plan.models import PlanResult
from agents.engine.react import ReActAgent
from agents.engine.run_state import AgentResult
from agents.engine.stop_reasons import StopReason
from agents.engine.tools import ToolRegistry
from agents.models import ExecutionMode
from agents.runs import addressed
from agents.runs.checkpoints import (
    DatabaseToolLedger,
    run_calls_announced,
    run_checkpoint_load,
    run_follow_ups_unread,
)
from agents.runs.control import (
    CANCEL,
    CancelRun,
    ControlRefused,
    FollowUp,
    RunControl,
    control_message,
    control_parse,
)
from agents.runs.events.store import EventSink, Fence, last_seq_sync, run_group
from agents.runs.leases import (
    lease_owner_new,
    lease_renew_seconds,
    lease_seconds,
    leases_renew,
    run_lease_take,
)
from agents.runs.lifecycle import RunEnd, RunStart, run_finish, run_park
from agents.runs.note_tasks import memory_notes_queue
from agents.runs.outcomes import (
    NOT_STARTED,
    Cancelled,
    Done,
    Failed,
    Interrupted,
    Parked,
    RunOutcome,
)
from agents.runs.parking import ParkedClaim, parked_run_claim
from connectors.configs import run_secret_values
from connectors.selectors import run_connector_actions

logger = logging.getLogger(__name__)


def approval_hold_seconds() -> float | None:
    """How long a run waits in process for an approval before it is parked (``None``: never parked)."""
    hold = getattr(settings, "APPROVAL_INPROCESS_HOLD_SECONDS", 120)
    return None if hold is None else float(hold)


@dataclass
class RunHandle:
    run_id: uuid.UUID
    task: asyncio.Task[None]
    owner: str = ""
    conversation_id: uuid.UUID | None = None
    follow_up_queue: FollowUpQueue = field(default_factory=FollowUpQueue)
    agent: ReActAgent | PlanAgent | None = None
    cancel_requested: bool = False
    lost: bool = False
    # Between taking its lease and recording its end: only then does the lease renewer speak for the run
    # (before, the lease may not be taken yet; after, the run's end has released it).
    holds_lease: bool = False
    # Whether a cancel may stop the task at any await: only once its event stream is open, so that the
    # cancel ends through that stream with a stored ``done``. Before, a cancel only sets
    # ``cancel_requested``, which the task reads as soon as the stream is open.
    cancellable: bool = False
    # Ids of the follow-up messages already queued (a resumed run loads unread ones from the database).
    follow_ups: set[int] = field(default_factory=set)
    # What the starter wrote (run, question, lease, last seq), so the run's first hop does not read it
    # back; dropped once the run's setup is built. ``None`` for a resumed run: it loads everything.
    started: RunStart | None = None


def _summary_of(messages: list[dict[str, Any]]) -> str | None:
    summaries = [m for m in messages if is_summary_message(m)]
    return str(summaries[-1].get("content")) if summaries else None


def _elapsed(started: float) -> float:
    return round(time.perf_counter() - started, 3)


class RunManager:
    """Owns this process's run tasks, their leases and their control channel.

    ``approval_hold``: seconds a run waits for an approval in process before it is parked (default:
    ``APPROVAL_INPROCESS_HOLD_SECONDS``; Celery workers use 0, so no task ever waits for a human).
    """

    def __init__(self, *, approval_hold: float | None = None) -> None:
        self.runs: dict[uuid.UUID, RunHandle] = {}
        self.approval_hold = approval_hold
        self._channel: str | None = None
        self._listener: asyncio.Task[None] | None = None
        self._renewer: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- starting and controlling -------------------------------------------------------------
    async def launch(
        self,
        run_id: uuid.UUID,
        *,
        resume: bool = False,
        owner: str | None = None,
        conversation_id: uuid.UUID | None = None,
        started: RunStart | None = None,
    ) -> RunHandle:
        """Start the run's task in this process and subscribe it to control messages.

        ``resume``: continue from the run's checkpoint; the caller has claimed the run with
        :func:`agents.runs.lifecycle.run_resume` (or ``run_resume_parked``) for ``owner`` (from
        :func:`agents.runs.leases.lease_owner_new`).
        ``conversation_id`` lets :meth:`local_run_for` find the run without the database.
        ``started``: the new run's :func:`~agents.runs.lifecycle.run_start` (its lease taken for ``owner``
        there, when it was given one): the run then starts without reading back what that wrote.
        """
        await self._ensure_listener()
        handle = RunHandle(
            run_id=run_id,
            task=None,  # type: ignore[arg-type]  # set just below: the task's coroutine takes the handle
            owner=owner or (started.run.lease_owner if started is not None else "") or lease_owner_new(),
            conversation_id=conversation_id,
            started=started,
        )
        handle.task = asyncio.create_task(self._execute(handle, resume), name=f"run-{run_id}")
        self.runs[run_id] = handle
        layer = get_channel_layer()
        if layer is not None and self._channel is not None:
            await layer.group_add(run_group(run_id), self._channel)
        return handle

    def local_run_for(self, conversation_id: uuid.UUID) -> uuid.UUID | None:
        """The conversation's run working in this process, if any (a cancel needs no database then)."""
        for handle in self.runs.values():
            if handle.conversation_id == conversation_id and not handle.lost and not handle.task.done():
                return handle.run_id
        return None

    async def send_control(self, run_id: uuid.UUID, control: RunControl) -> None:
        """Deliver a follow-up or a cancel to the run, wherever it runs."""
        local = self.runs.get(run_id)
        if local is not None:
            self._apply(local, control)
            return
        layer = get_channel_layer()
        if layer is not None:
            await layer.group_send(run_group(run_id), control_message(run_id, control))

    def _apply(self, handle: RunHandle, control: RunControl) -> None:
        match control:
            case FollowUp(content=content, message_id=message_id):
                if message_id is not None:
                    if message_id in handle.follow_ups:
                        return  # a resumed run already took it from the database
                    handle.follow_ups.add(message_id)
                handle.follow_up_queue.put(content)
            case CancelRun():
                handle.cancel_requested = True
                self._stop(handle)

    @staticmethod
    def _stop(handle: RunHandle) -> None:
        if handle.agent is not None:
            handle.agent.cancel()
        elif handle.cancellable and not handle.task.done():
            handle.task.cancel()
        # Otherwise the task is still taking its lease and opening its stream: cancelled there, it
        # could neither store a ``done`` nor record its end (the run would stay active). It reads
        # ``cancel_requested`` (or ``lost``) once the stream is open.

    def _lose(self, handle: RunHandle) -> None:
        """The run's lease was taken from this process: stop it; it records nothing more."""
        if not handle.lost:
            logger.warning("run %s: lease lost; stopping it in this process", handle.run_id)
            handle.lost = True
            self._stop(handle)

    async def _ensure_listener(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not None and self._loop is not loop:
            # A new event loop (tests, a worker's next task): runs of the old one can never finish here.
            self.runs = {k: h for k, h in self.runs.items() if h.task.get_loop() is loop}
        if self._renewer is None or self._renewer.done() or self._loop is not loop:
            self._renewer = asyncio.create_task(self._renew_leases(), name="run-lease-renewer")
        if self._listener is not None and not self._listener.done() and self._loop is loop:
            return
        self._loop = loop
        layer = get_channel_layer()
        if layer is None:
            return
        self._channel = await layer.new_channel("runs.")
        self._listener = asyncio.create_task(self._listen(layer, self._channel), name="run-control-listener")

    async def _listen(self, layer: Any, channel: str) -> None:
        while True:
            try:
                message = await layer.receive(channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("run control channel failed; retrying")
                await asyncio.sleep(0.5)
                continue
            parsed = control_parse(message)
            if isinstance(parsed, ControlRefused):
                logger.warning("run control channel: a message was refused (%s)", parsed.reason)
                continue
            handle = self.runs.get(parsed.run_id)
            if handle is not None:
                self._apply(handle, parsed.control)

    async def _renew_leases(self) -> None:
        """Keep the leases of quiet runs (waiting on a model or a human); busy runs renew with every
        event batch anyway."""
        renew = database_sync_to_async(leases_renew)
        while True:
            await asyncio.sleep(lease_renew_seconds())
            handles = [h for h in self.runs.values() if h.holds_lease and not h.lost and not h.task.done()]
            if not handles:
                continue
            try:
                held = await renew([(h.run_id, h.owner) for h in handles])
            except Exception:
                logger.warning(
                    "could not renew the leases of %d run(s); retrying", len(handles), exc_info=True
                )
                continue
            for handle in handles:
                if handle.run_id not in held and handle.holds_lease and not handle.task.done():
                    self._lose(handle)

    async def wait(self, run_id: uuid.UUID) -> None:
        """Wait until a run of this process finishes or parks for good, through any resumption this
        process started meanwhile (tests, workers and graceful shutdown)."""
        while (handle := self.runs.get(run_id)) is not None:
            await asyncio.gather(handle.task, return_exceptions=True)
            if self.runs.get(run_id) is handle:
                return

    async def shutdown(self) -> None:
        for handle in list(self.runs.values()):
            self._apply(handle, CANCEL)
        await asyncio.gather(*(h.task for h in self.runs.values()), return_exceptions=True)
        for name in ("_listener", "_renewer"):
            task = getattr(self, name)
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
                setattr(self, name, None)

    # -- one run ------------------------------------------------------------------------------
    async def _execute(self, handle: RunHandle, resume: bool) -> None:
        run_id = handle.run_id
        owner = handle.owner
        started = time.perf_counter()
        sink: EventSink | None = None
        outcome: RunOutcome = NOT_STARTED
        try:
            sink = _stream_of_start(handle, on_lease_lost=lambda: self._lose(handle))
            if sink is None:
                sink = await database_sync_to_async(_stream_open)(
                    handle, on_lease_lost=lambda: self._lose(handle)
                )
            if sink is None:
                logger.warning("run %s is not this process's to run; leaving it", run_id)
                handle.lost = True
                outcome = Interrupted()
                return
            handle.holds_lease = True
            handle.cancellable = True
            if handle.cancel_requested or handle.lost:  # stopped before it could start
                outcome = _cancelled(sink, started)
            else:
                with tracing.run_span({"run": str(run_id)}) as span:
                    outcome = await self._run_engine(handle, sink, resume, started)
                    span.outcome(str(getattr(outcome, "stop_reason", "") or type(outcome).__name__.lower()))
        except asyncio.CancelledError:
            # Cancelled before the engine took over (or during shutdown): end the stream cleanly.
            outcome = _cancelled(sink, started)
        except Exception as exc:
            logger.exception("run %s failed", run_id)
            message = f"{type(exc).__name__}: the run failed unexpectedly."
            outcome = Failed(_elapsed(started), StopReason.ERROR, error=message)
            if sink is not None:
                sink.emit("error", {"code": "run_failed", "message": message})
                _emit_done(sink, outcome.elapsed, cancelled=False, reason=StopReason.ERROR)
        finally:
            await self._record(handle, sink, outcome, owner)

    async def _run_engine(
        self, handle: RunHandle, sink: EventSink, resume: bool, started: float
    ) -> RunOutcome:
        run_id = handle.run_id
        start, handle.started = handle.started, None
        blueprint, tools, hooks = await database_sync_to_async(_engine_parts)(run_id, sink, start)
        resume_from = await database_sync_to_async(run_checkpoint_load)(run_id=run_id) if resume else None
        if resume_from is not None:
            pending = [str(call["id"]) for call in resume_from.get("pending") or ()]
            if pending:  # after a crash the checkpoint cannot know which calls the chat already shows
                shown = await database_sync_to_async(run_calls_announced)(
                    run_id=run_id, tool_call_ids=pending
                )
                resume_from["announced"] = sorted(shown | set(resume_from.get("announced") or ()))
            unread = await database_sync_to_async(run_follow_ups_unread)(
                run_id=run_id, taken=int(resume_from.get("interrupts_taken") or 0)
            )
            for message_id, content in unread:
                self._apply(handle, FollowUp(content, message_id))
        registry = runtime.registry_for(blueprint, meter=runtime.meter_for(blueprint, sink))
        routing = Usage()
        if resume_from is not None:  # a resumed run keeps the mode it was in
            mode = ExecutionMode.PLAN if resume_from.get("kind") == "plan" else ExecutionMode.REACT
        else:
            mode = await runtime.execution_mode_for(blueprint, registry, usage=routing)
        agent = runtime.engine_for(
            blueprint,
            tools=tools,
            hooks=hooks,
            follow_ups=handle.follow_up_queue,
            mode=mode,
            registry=registry,
            ledger=DatabaseToolLedger(sink),
        )
        handle.agent = agent
        if handle.cancel_requested or handle.lost:
            agent.cancel()
        hold = self.approval_hold if self.approval_hold is not None else approval_hold_seconds()
        metadata = blueprint.context.with_hold(hold)
        durable: dict[str, Any] = {"resume_from": resume_from, "checkpoint": sink.checkpoint}
        if resume_from is None and blueprint.attachments and isinstance(agent, ReActAgent):
            durable["attachments"] = blueprint.attachments
            # What the run read of the files sent with its question (each file whole, cut, as an image,
            # or unreadable), in its stream with its other events.
            sink.emit(
                "step",
                {
                    "type": "attachments",
                    "attachments": [read.as_data() for read in blueprint.attachments_read],
                },
            )
        result = await agent.run(
            blueprint.query,
            history=blueprint.history,
            on_event=sink,
            metadata=metadata,
            language=blueprint.language or None,
            **durable,
        )
        result.usage.add(routing)  # the router's call counts towards the run (and its done event)
        if result.park is not None:
            return Parked(approval_id=result.park.details.get("approval_id"))
        answer, stop_reason = result.answer, result.stop_reason
        if not result.cancelled:
            # A plan agent's run gives a PlanResult, a ReAct agent's an AgentResult. The answer may still
            # stop the run (a budget refusing the synthesis): its stop reason is the run's.
            if isinstance(agent, PlanAgent):
                answered = await agent.answer(cast(PlanResult, result), on_event=sink)
            else:
                answered = await agent.answer(cast(AgentResult, result), on_event=sink)
            answer, stop_reason = answered.text, answered.stop_reason
        ended = Cancelled if result.cancelled or handle.cancel_requested else Done
        return ended(
            elapsed=_elapsed(started),
            stop_reason=stop_reason,
            answer=answer,
            usage=result.usage.as_dict(),
            iterations=result.iterations,
            summary=_summary_of(getattr(result, "messages", None) or []),
        )

    async def _record(
        self, handle: RunHandle, sink: EventSink | None, outcome: RunOutcome, owner: str
    ) -> None:
        """Flush the run's events and checkpoints, then record its end (or its parking) if it is still
        this process's run."""
        run_id = handle.run_id
        handle.cancellable = False  # a late cancel must not cut the recording of the run's end
        try:
            await self._close_and_record(handle, sink, outcome, owner)
        except Exception:
            logger.exception("could not record the end of run %s", run_id)
        if self.runs.get(run_id) is not handle:
            return  # this process resumed the run meanwhile: the newer attempt owns the entry
        del self.runs[run_id]
        layer = get_channel_layer()
        if layer is not None and self._channel is not None:
            with contextlib.suppress(Exception):
                await layer.group_discard(run_group(run_id), self._channel)

    async def _close_and_record(
        self, handle: RunHandle, sink: EventSink | None, outcome: RunOutcome, owner: str
    ) -> None:
        run_id = handle.run_id
        handle.holds_lease = False  # the end recorded below releases the lease (the sink still fences)
        if handle.lost:  # interrupted by the sweeper meanwhile: whoever resumes it records its end
            outcome = Interrupted()
        if sink is None:  # it failed before it had a stream
            if not isinstance(outcome, Interrupted | Parked):
                await database_sync_to_async(run_finish)(
                    run_id=run_id, lease_owner=owner, **outcome.finish_fields()
                )
            return
        match outcome:
            case Interrupted():
                await sink.close()
                return
            case Parked(approval_id=approval_id):
                await sink.close()
                if not sink.lease_lost and await database_sync_to_async(run_park)(
                    run_id=run_id, owner=owner, approval_id=approval_id
                ):
                    await self._resume_if_decided(run_id)
                return
        ended = outcome.finish_fields()
        # The run's end is recorded in the transaction that stores its ``done`` event, which is published
        # only after that: a client that sees ``done`` and asks its next question at once finds the
        # conversation free (not a finishing run that would swallow the question).
        sink.release_done()
        sink.write_later(RunEnd(run_id, owner, ended))
        await sink.close()
        if sink.failed is not None and not sink.lease_lost:  # that batch may not have committed
            await database_sync_to_async(run_finish)(run_id=run_id, lease_owner=owner, **ended)
        if isinstance(outcome, Done) and not sink.lease_lost:
            try:
                await database_sync_to_async(memory_notes_queue)(run_id)
            except Exception:  # the run's end is recorded; its memory notes are not worth failing it
                logger.exception("could not queue the memory notes of run %s", run_id)

    async def _resume_if_decided(self, run_id: uuid.UUID) -> None:
        """Once a run's parking commits: resume it here if its request closed while it was parking (the
        request's wake-up then found it still held, see :mod:`agents.runs.wake`)."""
        owner = lease_owner_new()
        claim = await database_sync_to_async(parked_run_claim)(run_id=run_id, owner=owner)
        if claim is ParkedClaim.CLAIMED:
            logger.info("run %s: its request closed while it parked; resuming it here", run_id)
            await self.launch(run_id, resume=True, owner=owner)


def _stream_open(handle: RunHandle, *, on_lease_lost: Callable[[], None]) -> EventSink | None:
    """Take the run's lease and open its event stream, fenced by that lease (sync, one database hop);
    ``None`` when the run is not this process's to run."""
    if not run_lease_take(run_id=handle.run_id, owner=handle.owner):
        return None
    conversation_id = handle.conversation_id or addressed.runs().values_list(
        "conversation_id", flat=True
    ).get(pk=handle.run_id)
    return _sink(handle, conversation_id, last_seq_sync(conversation_id), on_lease_lost)


def _stream_of_start(handle: RunHandle, *, on_lease_lost: Callable[[], None]) -> EventSink | None:
    """The event stream of a run whose start took its lease for this attempt and read its conversation's
    last seq (no database); ``None`` otherwise (:func:`_stream_open` then does both)."""
    started = handle.started
    if started is None or started.last_seq is None or started.run.lease_owner != handle.owner:
        return None
    return _sink(handle, started.run.conversation_id, started.last_seq, on_lease_lost)


def _sink(
    handle: RunHandle, conversation_id: uuid.UUID, last_seq: int, on_lease_lost: Callable[[], None]
) -> EventSink:
    sink = EventSink(
        conversation_id=conversation_id,
        run_id=handle.run_id,
        first_seq=last_seq + 1,
        fence=Fence(handle.owner, lease_seconds()),
        on_lease_lost=on_lease_lost,
    )
    sink.hold_done = True  # published with the run's end: see RunManager._close_and_record
    return sink


def _engine_parts(
    run_id: uuid.UUID, sink: EventSink, started: RunStart | None = None
) -> tuple[runtime.RunBlueprint, ToolRegistry, HookRegistry]:
    """The run's blueprint, tools and hooks (sync, one database hop); hooks report through ``sink``."""
    blueprint = runtime.runtime_build(run_id, started=started)
    blueprint.emit = sink.emit
    blueprint.writes = sink
    # The run's connector credentials never reach its stored events or checkpoints, whatever the model sends,
    # nor the model see them: a target may answer with another connector's secret.
    blueprint.run_secrets = run_secret_values(run_connector_actions(blueprint))
    sink.redact_secrets(blueprint.run_secrets)
    return blueprint, runtime.tools_for(blueprint), runtime.hooks_for(blueprint)


def _cancelled(sink: EventSink | None, started: float) -> Cancelled:
    """The outcome of a run cancelled before its engine took over; its stream gets the cancelled
    ``done`` (held, like every run's, until its end is recorded)."""
    outcome = Cancelled(_elapsed(started), StopReason.CANCELLED)
    if sink is not None:
        _emit_done(sink, outcome.elapsed, cancelled=True, reason=StopReason.CANCELLED)
    return outcome


def _emit_done(sink: EventSink, elapsed: float, *, cancelled: bool, reason: StopReason) -> None:
    """The ``done`` of a run that ended before its engine answered (nothing answered, nothing counted)."""
    done = events.done("", 0, {}, elapsed, cancelled=cancelled, stop_reason=reason)
    sink.emit(done.channel, done.data)


run_manager = RunManager()
