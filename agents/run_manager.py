"""Runs live in tasks owned by the process, not by a socket.

``RunManager`` (one per process) starts a run's task, keeps it by run id, and receives the control
messages (interrupt, cancel) that any socket of any process sends to the run's channel-layer group. A
disconnecting browser does not stop a run; its events keep being persisted and published.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from agents import runtime
from agents.engine.context_summary import is_summary_message
from agents.engine.interrupts import InterruptQueue
from agents.engine.llm import Usage
from agents.engine.plan_agent import PlanAgent
from agents.engine.react import ReActAgent
from agents.events_store import EventSink, run_group
from agents.models import Run, RunStatus
from agents.services import run_finish

logger = logging.getLogger(__name__)

CONTROL_MESSAGE_TYPE = "run.control"


@dataclass
class RunHandle:
    run_id: uuid.UUID
    task: asyncio.Task[None]
    interrupts: InterruptQueue = field(default_factory=InterruptQueue)
    agent: ReActAgent | PlanAgent | None = None
    cancel_requested: bool = False


def _summary_of(messages: list[dict[str, Any]]) -> str | None:
    summaries = [m for m in messages if is_summary_message(m)]
    return str(summaries[-1].get("content")) if summaries else None


class RunManager:
    """Owns this process's run tasks and their control channel."""

    def __init__(self) -> None:
        self.runs: dict[uuid.UUID, RunHandle] = {}
        self._channel: str | None = None
        self._listener: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- starting and controlling -------------------------------------------------------------
    async def launch(self, run_id: uuid.UUID) -> RunHandle:
        """Start the run's task in this process and subscribe it to control messages."""
        await self._ensure_listener()
        handle = RunHandle(run_id=run_id, task=None)  # type: ignore[arg-type]
        handle.task = asyncio.create_task(self._execute(handle), name=f"run-{run_id}")
        self.runs[run_id] = handle
        layer = get_channel_layer()
        if layer is not None and self._channel is not None:
            await layer.group_add(run_group(run_id), self._channel)
        return handle

    async def send_control(self, run_id: uuid.UUID, action: str, content: str = "") -> None:
        """Deliver an interrupt or cancel to the run, wherever it runs."""
        local = self.runs.get(run_id)
        if local is not None:
            self._apply(local, action, content)
            return
        layer = get_channel_layer()
        if layer is not None:
            await layer.group_send(
                run_group(run_id),
                {"type": CONTROL_MESSAGE_TYPE, "run_id": str(run_id), "action": action, "content": content},
            )

    def _apply(self, handle: RunHandle, action: str, content: str) -> None:
        if action == "interrupt":
            handle.interrupts.put(content)
        elif action == "cancel":
            handle.cancel_requested = True
            if handle.agent is not None:
                handle.agent.cancel()
            elif not handle.task.done():
                handle.task.cancel()

    async def _ensure_listener(self) -> None:
        loop = asyncio.get_running_loop()
        if self._listener is not None and not self._listener.done() and self._loop is loop:
            return
        layer = get_channel_layer()
        if layer is None:
            return
        self._loop = loop
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
            if message.get("type") != CONTROL_MESSAGE_TYPE:
                continue
            handle = self.runs.get(uuid.UUID(message["run_id"]))
            if handle is not None:
                self._apply(handle, message.get("action", ""), message.get("content", ""))

    async def wait(self, run_id: uuid.UUID) -> None:
        """Wait until a run of this process finishes (tests and graceful shutdown)."""
        handle = self.runs.get(run_id)
        if handle is not None:
            await asyncio.gather(handle.task, return_exceptions=True)

    async def shutdown(self) -> None:
        for handle in list(self.runs.values()):
            self._apply(handle, "cancel", "")
        await asyncio.gather(*(h.task for h in self.runs.values()), return_exceptions=True)
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
            self._listener = None

    # -- one run ------------------------------------------------------------------------------
    async def _execute(self, handle: RunHandle) -> None:
        run_id = handle.run_id
        started = time.perf_counter()
        sink: EventSink | None = None
        outcome: dict[str, Any] = {"status": RunStatus.FAILED, "error": "the run did not start"}
        try:
            conversation_id = await database_sync_to_async(
                lambda: Run.objects.values_list("conversation_id", flat=True).get(pk=run_id)
            )()
            sink = await EventSink.open(conversation_id=conversation_id, run_id=run_id)
            blueprint = await database_sync_to_async(runtime.runtime_build)(run_id)
            blueprint.emit = runtime.emit_with_plan_step(sink.emit)
            tools = await database_sync_to_async(runtime.tools_for)(blueprint)
            hooks = await database_sync_to_async(runtime.hooks_for)(blueprint)
            registry = runtime.registry_for(blueprint)
            routing = Usage()
            mode = await runtime.execution_mode_for(blueprint, registry, usage=routing)
            agent = runtime.engine_for(
                blueprint,
                tools=tools,
                hooks=hooks,
                interrupt_queue=handle.interrupts,
                mode=mode,
                registry=registry,
            )
            handle.agent = agent
            if handle.cancel_requested:
                agent.cancel()
            result = await agent.run(
                blueprint.query, history=blueprint.history, on_event=sink, metadata=blueprint.metadata()
            )
            result.usage.add(routing)  # the router's call counts towards the run (and its done event)
            answer = result.answer
            if not result.cancelled:
                if isinstance(agent, PlanAgent):
                    answer = await agent.stream_synthesize(result, on_event=sink)
                else:
                    answer = await agent.stream_answer(result, on_event=sink)
            outcome = {
                "status": RunStatus.CANCELLED
                if result.cancelled or handle.cancel_requested
                else RunStatus.DONE,
                "answer": answer,
                "usage": result.usage.as_dict(),
                "iterations": result.iterations,
                "elapsed": round(time.perf_counter() - started, 3),
                "stop_reason": result.stop_reason,
                "summary": _summary_of(getattr(result, "messages", None) or []),
            }
        except asyncio.CancelledError:
            # Cancelled before the engine took over (or during shutdown): end the stream cleanly.
            outcome = {
                "status": RunStatus.CANCELLED,
                "elapsed": round(time.perf_counter() - started, 3),
                "stop_reason": "cancelled",
            }
            if sink is not None:
                sink.emit(
                    "done",
                    {
                        "answer": "",
                        "iterations": 0,
                        "usage": {},
                        "elapsed": outcome["elapsed"],
                        "cancelled": True,
                        "stop_reason": "cancelled",
                    },
                )
        except Exception as exc:
            logger.exception("run %s failed", run_id)
            message = f"{type(exc).__name__}: the run failed unexpectedly."
            outcome = {
                "status": RunStatus.FAILED,
                "error": message,
                "elapsed": round(time.perf_counter() - started, 3),
                "stop_reason": "error",
            }
            if sink is not None:
                sink.emit("error", {"code": "run_failed", "message": message})
                sink.emit(
                    "done",
                    {
                        "answer": "",
                        "iterations": 0,
                        "usage": {},
                        "elapsed": outcome["elapsed"],
                        "cancelled": False,
                        "stop_reason": "error",
                    },
                )
        finally:
            try:
                if sink is not None:
                    await sink.close()
                await database_sync_to_async(run_finish)(run_id=run_id, **outcome)
            except Exception:
                logger.exception("could not record the end of run %s", run_id)
            self.runs.pop(run_id, None)
            layer = get_channel_layer()
            if layer is not None and self._channel is not None:
                with contextlib.suppress(Exception):
                    await layer.group_discard(run_group(run_id), self._channel)


run_manager = RunManager()
