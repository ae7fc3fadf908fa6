"""The persisted, fanned-out event stream of a conversation (DESIGN section 4).

Every event a run emits gets the next ``seq`` of its conversation, is written to ``RunEvent`` and only
then published to the conversation's channel-layer group, so a client that reconnects to any process
can replay from the database exactly what it missed and skip, by ``seq``, what it already has.

One :class:`EventSink` per run; one writer task per event loop for all of them (group commit). It
writes whatever every run queued while its previous write ran in one transaction, then publishes it:
the event loop never waits on the database, a burst of answer deltas costs one transaction instead of
one per token, and 50 streaming runs cost one transaction per write instead of 50 queued one behind
the other on the process's single database thread.

Nothing a run emits can fail its batch because of a value (:func:`agents.sql.prep_field` stores
NaN, NUL and lone surrogates spelled out), and a sink given the run's connector secrets replaces them in
every event and checkpoint before it stores or publishes anything.

Durable runs: the sink also writes the run's checkpoints, and is the run's unit of work: the other writes
the run makes (its named :class:`~agents.engine.run_writes.RunWrite` operations: call-log rows,
tool-ledger rows, its end, budget warnings) ride its batches, in the same transactions as the events
around them. The sink is *fenced* by the run's lease: every batch renews the
lease (:func:`agents.runs.leases.leases_renew`, ``UPDATE run ... WHERE lease_owner = <this process>
AND status = 'running'``). When that matches nothing (the run was declared interrupted and perhaps
resumed elsewhere) the batch is dropped unpublished and the sink reports :class:`LeaseLost`, so a
process that lost its run can never add to its stream. On PostgreSQL a batch is one statement that
does all of it, fence included (:func:`agents.runs.events.sql.batch_write_fenced`); elsewhere a
transaction of several. Events written for a run that holds no process (interrupted, parked, cancelled while parked) go through
:func:`event_append`, under a lock of the run's row.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
import weakref
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.db.models import Max
from django.utils import timezone

from agents.engine.run_writes import RunWrite
from agents.engine.strict_json import json_safe
from agents.models import Run, RunCheckpoint, RunEvent
from agents.runs.events.fanout import group_send_many
from agents.runs.events.relay import events_message
from agents.runs.events.sql import (
    FenceBroken,
    FencedBatch,
    PendingEvent,
    batch_write_fenced,
    checkpoints_insert,
    events_insert,
    run_checkpoint_set,
    usage_insert,
)
from agents.runs.events.texts import frame_text
from agents.runs.leases import leases_renew
from agents.usage.rows import PendingUsage
from connectors.redaction import scrub_value
from connectors.scrub import secret_variants

logger = logging.getLogger(__name__)

T = TypeVar("T")


def conversation_group(conversation_id: uuid.UUID | str) -> str:
    """The channel-layer group every socket of a conversation joins."""
    return f"conv.{uuid.UUID(str(conversation_id)).hex}"


def run_group(run_id: uuid.UUID | str) -> str:
    """The channel-layer group that carries control messages (:mod:`agents.runs.control`: a follow-up, a
    cancel) to a run's process."""
    return f"run.{uuid.UUID(str(run_id)).hex}"


def last_seq_sync(conversation_id: uuid.UUID) -> int:
    return RunEvent.objects.filter(conversation_id=conversation_id).aggregate(m=Max("seq"))["m"] or 0


def events_after_sync(conversation_id: uuid.UUID, after_seq: int, limit: int = 5000) -> list[dict[str, Any]]:
    """Persisted frames of a conversation with ``seq > after_seq``, in order."""
    rows = RunEvent.objects.filter(conversation_id=conversation_id, seq__gt=after_seq).order_by("seq")[:limit]
    return [row.frame() for row in rows]


def answer_delta_window() -> float:
    """Seconds an answer delta may wait for the run's next pieces (``ANSWER_DELTA_WINDOW_MS``, default 0:
    none): a streamed answer then costs one row, publish and frame per window instead of one per token.

    Off by default: at 200 conversations a 25 ms window raised the median model-to-client latency by
    about 20 ms for a few per cent of CPU (benchmarks/README.md, issue #22); deltas are merged anyway
    while the event writer is busy."""
    return max(0.0, float(getattr(settings, "ANSWER_DELTA_WINDOW_MS", 0))) / 1000


class LeaseLost(Exception):
    """The run's lease is no longer this process's: its writes are refused."""


@dataclass(frozen=True, slots=True)
class Fence:
    """The lease a sink's writes require: held by ``owner``, renewed for ``lease_seconds`` per batch."""

    owner: str
    lease_seconds: float


@dataclass(frozen=True, slots=True)
class _Checkpoint:
    seq: int
    data: dict[str, Any]
    # Resolved once the checkpoint is committed (checkpoints with pending tool calls are waited for).
    committed: asyncio.Future[None] | None = None


@dataclass(slots=True)
class _Durable:
    """A write its caller waits for (a record that must exist before a tool call runs). Queued with the
    run's events, it is written after them, together with every run's durable writes of the same batch
    in one transaction of their own on the process's database thread (the writer's next batch of events
    does not wait for it), each in a savepoint, so a write the database refuses costs the others
    nothing; each is resolved only once that transaction has committed."""

    write: RunWrite[Any]
    committed: asyncio.Future[Any]
    value: Any = None
    error: BaseException | None = None

    def __call__(self) -> None:  # in the writer's thread, inside the batch's transaction
        self.value, self.error = None, None
        try:
            with transaction.atomic():
                self.value = self.write.apply()
        except Exception as exc:
            self.error = exc

    def settle(self, error: BaseException | None) -> None:
        """On the event loop, once the batch is committed (``error`` None) or lost."""
        if self.committed.done():
            return
        error = error if error is not None else self.error
        if error is not None:
            self.committed.set_exception(error)
        else:
            self.committed.set_result(self.value)


_Item = PendingEvent | _Checkpoint | PendingUsage | _Durable | RunWrite[object]
# What one run's part of a write is: its id, events, checkpoints, model calls, other writes and fence.
_Args = tuple[
    uuid.UUID, list[PendingEvent], list[_Checkpoint], list[PendingUsage], list[RunWrite[object]], Fence | None
]


class _FenceMismatch(Exception):
    """A batch written together with others found one of their leases gone (which one is not known)."""


@dataclass(slots=True)
class _Part:
    """What one sink queued since the previous write, in order within its kind."""

    sink: EventSink
    rows: list[PendingEvent] = field(default_factory=list)
    checkpoints: list[_Checkpoint] = field(default_factory=list)
    usage: list[PendingUsage] = field(default_factory=list)
    writes: list[RunWrite[object]] = field(default_factory=list)
    durables: list[_Durable] = field(default_factory=list)
    closers: list[asyncio.Future[None]] = field(default_factory=list)
    last: _Item | None = None

    def add(self, item: _Item) -> None:
        self.last = item
        if isinstance(item, PendingEvent):
            self.rows.append(item)
        elif isinstance(item, _Checkpoint):
            self.checkpoints.append(item)
        elif isinstance(item, PendingUsage):
            self.usage.append(item)
        elif isinstance(item, _Durable):
            self.durables.append(item)
        else:
            self.writes.append(item)

    @property
    def has_writes(self) -> bool:
        return bool(self.rows or self.checkpoints or self.usage or self.writes)

    @property
    def waiting(self) -> list[asyncio.Future[None]]:
        return [c.committed for c in self.checkpoints if c.committed is not None]

    def settle(self, error: BaseException | None) -> None:
        """Resolve what waits for this part's commit (its checkpoints); when it failed, its durable
        writes too (they are not made: the run's lease is gone, or its database)."""
        _settle(self.waiting, error)
        if error is not None:
            for durable in self.durables:
                durable.settle(error)


@dataclass(slots=True)
class _Outgoing:
    seqs: list[int] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    closers: list[asyncio.Future[None]] = field(default_factory=list)


def _checkpoints_write(run_id: uuid.UUID, checkpoints: list[_Checkpoint], created_at: datetime) -> None:
    """Store a run's new checkpoints and keep the latest state on the run; a checkpoint that carries
    everything (the first, after a compaction, every plan-mode one) supersedes the rows before it."""
    if not checkpoints:
        return
    run_checkpoint_set(run_id, checkpoints[-1].data.get("state") or {}, checkpoints[-1].seq)
    checkpoints, prune_before = _checkpoints_kept(checkpoints)
    if prune_before is not None:
        RunCheckpoint.objects.filter(run_id=run_id, seq__lt=prune_before).delete()
    checkpoints_insert([(run_id, c.seq, c.data) for c in checkpoints], created_at)


def _checkpoints_kept(checkpoints: list[_Checkpoint]) -> tuple[list[_Checkpoint], int | None]:
    """The checkpoints to store and, when one of them carries everything, the seq below which the run's
    stored rows are superseded (``None``: keep them all)."""
    resets = [i for i, c in enumerate(checkpoints) if c.data.get("reset")]
    if not resets:
        return checkpoints, None
    kept = checkpoints[resets[-1] :]
    return kept, kept[0].seq


def _write_batch(
    run_id: uuid.UUID,
    rows: list[PendingEvent],
    checkpoints: list[_Checkpoint],
    usage: list[PendingUsage],
    writes: list[RunWrite[object]],
    fence: Fence | None,
) -> None:
    """Write one run's batch on its own (one statement on PostgreSQL, else a transaction); raises
    :class:`LeaseLost` if its fence fails."""
    if fence is not None and _one_statement():
        try:
            _write_fenced([(run_id, rows, checkpoints, usage, writes, fence)])
        except FenceBroken as exc:
            raise LeaseLost(str(run_id)) from exc
        return
    with transaction.atomic():
        now = timezone.now()
        if fence is not None:
            until = now + timedelta(seconds=fence.lease_seconds)
            if not leases_renew([(run_id, fence.owner)], until):
                raise LeaseLost(str(run_id))
        events_insert(rows, now)
        _checkpoints_write(run_id, checkpoints, now)
        usage_insert(usage, now)
        for write in writes:
            write.apply()


def _write_batches(parts: list[_Args]) -> None:
    """Write the batches of several runs in ONE transaction: one lease renewal for all, one INSERT of
    all their events. Raises :class:`_FenceMismatch` (nothing written) when any lease is gone."""
    if _one_statement() and all(part[5] is not None for part in parts):
        try:
            _write_fenced(parts)
        except FenceBroken as exc:
            raise _FenceMismatch from exc
        return
    with transaction.atomic():
        now = timezone.now()
        fenced: dict[float, list[tuple[uuid.UUID, str]]] = {}
        for run_id, _rows, _checkpoints, _usage, _writes, fence in parts:
            if fence is not None:
                fenced.setdefault(fence.lease_seconds, []).append((run_id, fence.owner))
        for seconds, held in fenced.items():
            if len(leases_renew(held, now + timedelta(seconds=seconds))) != len(held):
                raise _FenceMismatch
        events_insert([row for part in parts for row in part[1]], now)
        for run_id, _rows, checkpoints, _usage, _writes, _fence in parts:
            _checkpoints_write(run_id, checkpoints, now)
        usage_insert([row for part in parts for row in part[3]], now)
        for part in parts:
            for write in part[4]:
                write.apply()


def _one_statement() -> bool:
    """Whether fenced batches go as one statement (:func:`agents.runs.events.sql.batch_write_fenced`)."""
    return connection.vendor == "postgresql"


def _write_fenced(parts: list[_Args]) -> None:
    """Fenced batches of several runs in one statement, in autocommit when nothing else is to be written
    (one round trip in all); the runs' other writes (a run's end, the tool ledger) follow it in one
    transaction. Raises :class:`FenceBroken` when a lease is gone (nothing written)."""
    now = timezone.now()
    batches = []
    for run_id, rows, checkpoints, usage, _writes, fence in parts:
        assert fence is not None
        batch = FencedBatch(
            run_id=run_id,
            owner=fence.owner,
            lease_until=now + timedelta(seconds=fence.lease_seconds),
            events=rows,
            checkpoints=[],
            usage=usage,
        )
        if checkpoints:
            batch.latest = (checkpoints[-1].data.get("state") or {}, checkpoints[-1].seq)
            kept, batch.prune_before = _checkpoints_kept(checkpoints)
            batch.checkpoints = [(c.seq, c.data) for c in kept]
        batches.append(batch)
    writes = [write for part in parts for write in part[4]]
    if not writes:
        batch_write_fenced(batches, now)
        return
    with transaction.atomic():
        batch_write_fenced(batches, now)
        for write in writes:
            write.apply()


# The writer's own database thread (and so its own connection): event writes never queue behind the
# other database work of the process, which asgiref runs on one shared thread one call after another.
_WRITER_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="event-writer")


def _with_connection(function: Callable[..., None], args: tuple[Any, ...]) -> None:
    close_old_connections()
    try:
        function(*args)
    finally:
        close_old_connections()


async def _in_writer_thread(function: Callable[..., None], *args: Any) -> None:
    await asyncio.get_running_loop().run_in_executor(_WRITER_THREAD, _with_connection, function, args)


class _Writer:
    """The event writer of one event loop, shared by every run's sink on it (group commit).

    Whatever all runs queued while the previous write ran is written in one transaction, in the writer's
    own thread, so the cost per write (a round trip per statement) is shared by every run instead of
    queued once per run. Written frames are then published by a task of their own (one channel-layer
    message per run, all in one round trip) while the next write runs. Should that transaction fail (a
    lease gone, the database refusing one run's rows) each run's batch is written again on its own, so
    one run never costs another its events.

    An event is encoded once, when its batch is written (answer deltas no longer join it then): its
    stored data and its frame's text (:meth:`PendingEvent.texts`); the message carries the text, which
    the sockets send as it is (:mod:`agents.runs.events.relay`).
    """

    def __init__(self) -> None:
        self._pending: dict[EventSink, _Part] = {}
        self._task: asyncio.Task[None] | None = None
        # Written frames waiting to be published, per run, with the close() waiters behind them. The
        # publisher works beside the writer: the next write does not wait for the channel layer.
        self._outbox: dict[EventSink, _Outgoing] = {}
        self._publisher: asyncio.Task[None] | None = None
        # Durable writes waiting for their transaction, and the task that writes them.
        self._durables: list[tuple[EventSink, _Durable]] = []
        self._durable_task: asyncio.Task[None] | None = None

    def put(self, sink: EventSink, item: _Item | None) -> asyncio.Future[None] | None:
        """Queue an item of ``sink``; ``None`` asks for a future resolved once all before it is out."""
        part = self._pending.get(sink)
        if part is None:
            part = self._pending[sink] = _Part(sink)
        done: asyncio.Future[None] | None = None
        if item is None:
            done = asyncio.get_running_loop().create_future()
            part.closers.append(done)
        else:
            part.add(item)
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name="event-writer")
        return done

    def queued_delta(self, sink: EventSink) -> PendingEvent | None:
        """The answer delta ``sink`` queued last, if nothing else of it was queued after it and it is
        still waiting for the next write."""
        part = self._pending.get(sink)
        if part is None or part.last is None or not isinstance(part.last, PendingEvent):
            return None
        row = part.last
        if row.event == "answer" and row.data.get("status") == "delta":
            return row
        return None

    async def _loop(self) -> None:
        try:
            while self._pending:
                parts = list(self._pending.values())
                self._pending = {}
                try:
                    await self._write(parts)
                    self._hand_over(parts)
                    self._queue_durables(parts)
                except BaseException:
                    for part in parts:
                        _settle(part.closers, None)
                        part.settle(RuntimeError("the event writer stopped before this batch was written"))
                    raise
        finally:
            self._task = None

    def _hand_over(self, parts: list[_Part]) -> None:
        for part in parts:
            if not part.rows and not part.closers:
                continue
            outgoing = self._outbox.get(part.sink)
            if outgoing is None:
                outgoing = self._outbox[part.sink] = _Outgoing()
            for row in part.rows:
                outgoing.seqs.append(row.seq)
                outgoing.texts.append(row.texts().frame)
            outgoing.closers += part.closers
        if self._outbox and self._publisher is None:
            self._publisher = asyncio.create_task(self._publish_loop(), name="event-publisher")

    async def _publish_loop(self) -> None:
        """Publish what was written, in order per run: frames of several writes that waited for the
        channel layer go out as one message."""
        try:
            while self._outbox:
                batch, self._outbox = self._outbox, {}
                try:
                    await self._publish(batch)
                finally:
                    for outgoing in batch.values():
                        _settle(outgoing.closers, None)
        finally:
            self._publisher = None

    @staticmethod
    async def _publish(batch: dict[EventSink, _Outgoing]) -> None:
        """One channel-layer message per run, all of them in one pipelined round trip."""
        layer = get_channel_layer()
        if layer is None:
            return
        messages = [
            (sink._group, events_message(sink._run_text, outgoing.seqs, outgoing.texts))
            for sink, outgoing in batch.items()
            if outgoing.texts
        ]
        if not messages:
            return
        try:
            await group_send_many(layer, messages)
        except Exception:
            logger.exception("could not publish the events of %d run(s)", len(messages))

    async def _write(self, parts: list[_Part]) -> None:
        live: list[_Part] = []
        for part in parts:
            if part.sink.lease_lost:  # a run that lost its lease adds nothing more
                part.settle(LeaseLost(str(part.sink.run_id)))
                part.rows = []
            elif part.has_writes:
                live.append(part)
        if len(live) > 1:
            try:
                await _in_writer_thread(_write_batches, [_args(part) for part in live])
            except Exception as exc:
                if not isinstance(exc, _FenceMismatch):
                    logger.warning("writing %d runs' events together failed (%s); one by one", len(live), exc)
            else:
                for part in live:
                    part.settle(None)
                return
        for part in live:
            await self._write_one(part)

    def _queue_durables(self, parts: list[_Part]) -> None:
        """Hand the batch's durable writes to their own task: the next batch of events does not wait
        for them (they run on the process's database thread, not the writer's)."""
        for part in parts:
            for durable in part.durables:
                if part.sink.lease_lost:
                    durable.settle(LeaseLost(str(part.sink.run_id)))
                elif not durable.committed.done():
                    self._durables.append((part.sink, durable))
        if self._durables and self._durable_task is None:
            self._durable_task = asyncio.create_task(self._durables_loop(), name="event-durables")

    async def _durables_loop(self) -> None:
        try:
            while self._durables:
                ready, self._durables = self._durables, []
                try:
                    await self._write_durables(ready)
                except BaseException as exc:
                    for _sink, durable in ready:
                        durable.settle(RuntimeError(f"the durable writes stopped ({type(exc).__name__})"))
                    raise
        finally:
            self._durable_task = None

    @staticmethod
    async def _write_durables(ready: list[tuple[EventSink, _Durable]]) -> None:
        """Durable writes of several runs in one transaction (each in a savepoint)."""
        lost: set[uuid.UUID] = set()
        try:
            await database_sync_to_async(_durables_write)(ready, lost)
        except Exception as exc:
            logger.warning("could not write %d records a tool call waits for (%s)", len(ready), exc)
            for _sink, durable in ready:
                durable.settle(exc)
            return
        for sink, durable in ready:
            if sink.run_id in lost:
                if not sink.lease_lost:
                    sink._lost()
                durable.settle(LeaseLost(str(sink.run_id)))
            else:
                durable.settle(None)

    async def _write_one(self, part: _Part) -> None:
        sink = part.sink
        try:
            await _in_writer_thread(_write_batch, *_args(part))
        except LeaseLost as exc:
            sink._lost()
            part.settle(exc)
            part.rows = []
        except Exception as exc:  # the database is down: log, keep publishing so live clients see it
            sink.failed = exc
            part.settle(exc)
            logger.exception("could not persist %d events of run %s", len(part.rows), sink.run_id)
        else:
            part.settle(None)


def _durables_write(ready: list[tuple[EventSink, _Durable]], lost: set[uuid.UUID]) -> None:
    """Fenced like the events: the runs' leases are renewed first, in the same transaction, and the
    writes of a run whose lease is gone are not made (its id is added to ``lost``)."""
    with transaction.atomic():
        fenced: dict[float, list[tuple[uuid.UUID, str]]] = {}
        for sink, _durable in ready:
            if sink.fence is not None:
                fenced.setdefault(sink.fence.lease_seconds, []).append((sink.run_id, sink.fence.owner))
        now = timezone.now()
        for seconds, held in fenced.items():
            kept = leases_renew(set(held), now + timedelta(seconds=seconds))
            lost.update(run_id for run_id, _owner in held if run_id not in kept)
        for sink, durable in ready:
            if sink.run_id not in lost:
                durable()


def _args(part: _Part) -> _Args:
    return part.sink.run_id, part.rows, part.checkpoints, part.usage, part.writes, part.sink.fence


_writers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Writer] = weakref.WeakKeyDictionary()


def _writer() -> _Writer:
    loop = asyncio.get_running_loop()
    writer = _writers.get(loop)
    if writer is None:
        writer = _writers[loop] = _Writer()
    return writer


class EventSink:
    """The ``on_event`` callback of one run: assigns seq, persists, then publishes, in order.

    With a :class:`Fence` it also keeps the run's lease (see the module docstring); ``on_lease_lost``
    is called once, on the event loop, when a batch finds the lease gone.
    """

    def __init__(
        self,
        *,
        conversation_id: uuid.UUID,
        run_id: uuid.UUID,
        first_seq: int,
        fence: Fence | None = None,
        on_lease_lost: Callable[[], None] | None = None,
        secrets: Iterable[str] = (),
    ) -> None:
        self.conversation_id = conversation_id
        self.run_id = run_id
        self._next_seq = first_seq
        self._group = conversation_group(conversation_id)
        self._run_text = str(run_id)
        self._queued = False
        self.last_seq = first_seq - 1
        self.failed: BaseException | None = None
        self.fence = fence
        self.on_lease_lost = on_lease_lost
        self.lease_lost = False
        # With ``hold_done`` the run's ``done`` event waits for :meth:`release_done`, so the run's end
        # can be recorded in the transaction that stores it (see RunManager._record).
        self.hold_done = False
        self.held_done: dict[str, Any] | None = None
        # Answer deltas: at most one per window per run (seconds; 0 turns it off). See _hold_delta.
        self.delta_window = answer_delta_window()
        self._held: PendingEvent | None = None
        self._held_timer: asyncio.TimerHandle | None = None
        self._last_delta_at = float("-inf")
        self.redact_secrets(secrets)

    def redact_secrets(self, secrets: Iterable[str]) -> None:
        """Replace these secret values (the run's connector credentials) in everything the sink stores
        and publishes from now on: a model that sends a credential as a tool argument must not leave it
        in the ``iteration start`` event or the run's checkpoint."""
        self._secret_variants = secret_variants(secrets)

    async def __call__(self, event: Any) -> None:
        """Accept an engine ``Event`` (channel + data)."""
        self.emit(event.channel, event.data)

    def emit(self, channel: str, data: Mapping[str, Any]) -> int | None:
        """Queue one event; returns its seq (``None`` for a held ``done``). Never blocks."""
        if channel == "done" and self.hold_done:
            self.held_done = dict(data)
            return None
        return self._emit(channel, data)

    def release_done(self) -> None:
        """Queue the held ``done`` event, if any, behind everything emitted so far."""
        held, self.held_done = self.held_done, None
        if held is not None:
            self._emit("done", held)

    def _emit(self, channel: str, data: Mapping[str, Any]) -> int:
        delta = channel == "answer" and data.get("status") == "delta"
        if delta:
            queued = self._held or _writer().queued_delta(self)
            if queued is not None:
                if self._secret_variants:
                    data = scrub_value(data, self._secret_variants)
                # Streamed pieces that arrive while the previous write is under way (or while the
                # previous delta is held, below) join the delta still waiting: one row and one frame,
                # the same text.
                queued.data["content"] = f"{queued.data.get('content', '')}{data.get('content', '')}"
                return queued.seq
        if self._secret_variants:
            data = scrub_value(data, self._secret_variants)
        seq = self._next_seq
        self._next_seq += 1
        self.last_seq = seq
        row = PendingEvent(self.conversation_id, self.run_id, seq, channel, dict(data))
        if delta and self._hold_delta(row):
            return seq
        self._put(row)
        return seq

    def _hold_delta(self, row: PendingEvent) -> bool:
        """Hold an answer delta that comes less than the coalescing window after the run's previous one
        until that window has passed; pieces streamed meanwhile join it. Every run then sends at most one
        delta per window: fewer rows, publishes and frames, the same text, in the same order (anything
        else the run emits releases the held delta first)."""
        window = self.delta_window
        if window <= 0:
            return False
        loop = asyncio.get_running_loop()
        wait = self._last_delta_at + window - loop.time()
        if wait <= 0:
            self._last_delta_at = loop.time()
            return False
        self._held = row
        self._held_timer = loop.call_later(wait, self._release_held)
        return True

    def _release_held(self) -> None:
        held, self._held = self._held, None
        if self._held_timer is not None:
            self._held_timer.cancel()
            self._held_timer = None
        if held is not None:
            self._last_delta_at = asyncio.get_running_loop().time()
            self._queued = True
            _writer().put(self, held)

    async def checkpoint(self, checkpoint: Any) -> None:
        """The engine's ``checkpoint`` callback: queue the checkpoint behind the events before it.

        A checkpoint with pending tool calls is waited for until it is committed: no tool runs, and no
        approval is requested, before a resumed run would know about the call (otherwise a crash could
        lose the call's id, and a resumed run would ask the model again and make a second call).
        """
        state = checkpoint.state
        pending = bool(state.get("pending")) or _has_pending_steps(state)
        committed = asyncio.get_running_loop().create_future() if pending else None
        data = checkpoint.as_dict()
        if self._secret_variants:  # a resumed run then sees "[redacted]" where the model wrote a secret
            data = scrub_value(data, self._secret_variants)
        self._put(_Checkpoint(checkpoint.seq, data, committed))
        if committed is not None:
            await committed

    def usage(self, row: PendingUsage) -> None:
        """Queue one model call's ``UsageRecord``: written in the next batch, with the events (on
        PostgreSQL in the batch's one statement)."""
        self._put(row)

    def write_later(self, write: RunWrite[object]) -> None:
        """Apply ``write`` (in the database thread) in the transaction of the next batch."""
        self._put(write)

    def write_durable(self, write: RunWrite[T]) -> asyncio.Future[T]:
        """Apply ``write`` with the next batch, in a savepoint of its own (see :class:`_Durable`);
        the future gives what it returned once it has committed, or raises what refused it (the write,
        the database, :class:`LeaseLost`). What must be recorded before something happens (a tool
        call's ledger and call-log rows) waits for it: it costs no transaction or database hop of its
        own, and the batch's events neither wait for it nor depend on it."""
        committed: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        if self.lease_lost:
            committed.set_exception(LeaseLost(str(self.run_id)))
            return committed
        self._put(_Durable(write, committed))
        return committed

    def _put(self, item: _Item) -> None:
        if self._held is not None:  # a held delta goes first: the stream keeps its order
            self._release_held()
        self._queued = True
        _writer().put(self, item)

    async def close(self) -> None:
        """Flush every queued event (persisted and published)."""
        self._release_held()
        if not self._queued:
            return
        done = _writer().put(self, None)
        if done is not None:
            await done

    def _lost(self) -> None:
        logger.warning("run %s: this process lost its lease; its writes stop here", self.run_id)
        self.lease_lost = True
        if self.on_lease_lost is not None:
            self.on_lease_lost()


def _settle(futures: list[asyncio.Future[None]], error: BaseException | None) -> None:
    for future in futures:
        if not future.done():
            if error is None:
                future.set_result(None)
            else:
                future.set_exception(error)


def _has_pending_steps(state: Mapping[str, Any]) -> bool:
    """Whether a plan-mode state has a step whose own checkpoint has pending tool calls."""
    for plan in state.get("plans") or ():
        for step in plan.get("steps") or ():
            if (step.get("checkpoint") or {}).get("pending"):
                return True
    return False


def publish_frame(conversation_id: uuid.UUID | str, frame: dict[str, Any]) -> None:
    """Publish one persisted frame to the conversation's sockets from sync code (best effort: sockets
    fill gaps from the database)."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        message = events_message(str(frame["run_id"]), [frame["seq"]], [frame_text(frame)])
        async_to_sync(layer.group_send)(conversation_group(conversation_id), message)
    except Exception:
        logger.warning("could not publish event %s of conversation %s", frame.get("seq"), conversation_id)


def event_append(*, run: Run, channel: str, data: Mapping[str, Any]) -> RunEvent:
    """Append one event to the stream of a run that holds no process (sync, inside the caller's
    transaction, with the run's row locked by the caller); it is published once the transaction commits.
    """
    seq = last_seq_sync(run.conversation_id) + 1
    row = RunEvent.objects.create(
        conversation_id=run.conversation_id, run=run, seq=seq, event=channel, data=json_safe(dict(data))
    )
    frame = row.frame()
    transaction.on_commit(lambda: publish_frame(run.conversation_id, frame))
    return row
