"""Every change of a run's status, each one service, atomic with its side effects.

=================  =================================  ===============  =====================================
transition         from                               to               service (who calls it)
=================  =================================  ===============  =====================================
start              (a new run)                        running          :func:`run_start` (``PostMessage``)
finish             running (under the caller's lease) done, failed,    :func:`run_finish` (the run manager,
                                                      cancelled        in the writer's ``done`` transaction)
interrupt          running, its lease lapsed          interrupted      :func:`runs_interrupt_lapsed`
                                                                       (the sweeper)
resume             interrupted                        running          :func:`run_resume` (``Resume``)
park               running (under the caller's lease) parked           :func:`run_park` (the run manager)
resume-parked      parked                             running          :func:`run_resume_parked` (a worker)
cancel             parked                             cancelled        :func:`run_cancel_parked` (``Cancel``)
=================  =================================  ===============  =====================================

``PostMessage``, ``Resume`` and ``Cancel`` are the conversation commands (:mod:`agents.conversations`),
the one way the entry points ask for a transition. Any other change is refused: the service returns
``False`` and changes nothing (``run_start`` raises :class:`~agents.services.RunRefused`, as it does when
the conversation already has an active run).
A running run is cancelled by its own process (a control message, then ``finish`` as cancelled); a
done, failed or cancelled run never changes again. :data:`TRANSITIONS` is this table as data.

Side effects go with the transition's transaction: the interrupt's ``error`` event and the cancel's
``approval`` and ``done`` events are stored in it and published once it commits. What wakes a parked run
is :mod:`agents.runs.wake`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from agents.attachments.refusals import AttachmentRefused
from agents.attachments.services import attachments_bind
from agents.engine import events
from agents.engine.stop_reasons import StopReason
from agents.models import Conversation, Message, MessageRole, Run, RunStatus
from agents.runs import addressed
from agents.runs.events.store import event_append, last_seq_sync
from agents.runs.leases import lapsed, lease_until
from agents.runs.lifecycle_sql import run_end_write
from agents.services import RunRefused, message_content_check
from hooks.addressed import approvals
from hooks.approval import approval_approvers, approval_event_data
from hooks.services import approval_cancel

logger = logging.getLogger(__name__)

TITLE_CHARS = 80
INTERRUPTED_CODE = "run_interrupted"


@dataclass(frozen=True, slots=True)
class Transition:
    """One row of the table above: the statuses a run may leave by it and those it may reach."""

    sources: frozenset[str]
    targets: frozenset[str]


TRANSITIONS: Mapping[str, Transition] = {
    "start": Transition(frozenset(), frozenset({RunStatus.RUNNING})),
    "finish": Transition(
        frozenset({RunStatus.RUNNING}), frozenset({RunStatus.DONE, RunStatus.FAILED, RunStatus.CANCELLED})
    ),
    "interrupt": Transition(frozenset({RunStatus.RUNNING}), frozenset({RunStatus.INTERRUPTED})),
    "resume": Transition(frozenset({RunStatus.INTERRUPTED}), frozenset({RunStatus.RUNNING})),
    "park": Transition(frozenset({RunStatus.RUNNING}), frozenset({RunStatus.PARKED})),
    "resume-parked": Transition(frozenset({RunStatus.PARKED}), frozenset({RunStatus.RUNNING})),
    "cancel": Transition(frozenset({RunStatus.PARKED}), frozenset({RunStatus.CANCELLED})),
}


def max_concurrent_runs_per_user() -> int:
    return int(getattr(settings, "AGENT_MAX_CONCURRENT_RUNS_PER_USER", 3))


# -- start -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunStart:
    """A started run and its question. With the starter's lease owner, the run's lease is already taken
    and ``last_seq`` is its conversation's last event seq (read once the run held the conversation), so
    the run's task needs neither from the database again."""

    run: Run
    message: Message
    last_seq: int | None = None


@transaction.atomic
def run_start(
    *,
    conversation: Conversation,
    user: User,
    content: str,
    owner: str | None = None,
    language: str = "",
    attachment_ids: Sequence[uuid.UUID | str] = (),
) -> RunStart:
    """Record the user's message and a new running run for it; with ``owner`` (from
    :func:`agents.runs.leases.lease_owner_new`) the run is taken under that owner's lease at once.
    ``language`` is the user's interface language (the request's), which the run's stop and fallback
    messages are written in. ``attachment_ids`` (the user's pending uploads) are sent with the message,
    or nothing is recorded (:class:`RunRefused` with the attachments' reason).

    Refused while the conversation has a running run (the database's partial unique index decides
    when two processes race) or when the user already has the maximum number of running runs.
    """
    content = message_content_check(content)
    if not conversation.agent.active:
        raise RunRefused("agent_unavailable", _("This agent is not available."))
    # The limit counts the person's running runs in every organisation they belong to.
    running = Run.objects.unscoped().filter(user=user, status=RunStatus.RUNNING).count()
    if running >= max_concurrent_runs_per_user():
        raise RunRefused(
            "too_many_runs",
            _("You already have %(count)d answers in progress; wait for one to finish.") % {"count": running},
        )
    # No savepoint: the run is this transaction's first write, and a refusal rolls all of it back.
    try:
        run = Run.objects.create(
            organization_id=conversation.organization_id,
            conversation=conversation,
            user=user,
            language=language[:16],
            lease_owner=owner or "",
            lease_expires_at=lease_until() if owner else None,
        )
    except IntegrityError as exc:
        raise RunRefused("run_active", _("The agent is already answering in this conversation.")) from exc
    message = Message.objects.create(
        conversation=conversation, run=run, role=MessageRole.USER, content=content
    )
    if attachment_ids:
        bound = attachments_bind(
            user=user, conversation=conversation, message=message, attachment_ids=attachment_ids
        )
        if isinstance(bound, AttachmentRefused):
            raise RunRefused(bound.code, bound.message)
    if not conversation.title:
        conversation.title = content.strip().splitlines()[0][:TITLE_CHARS]
    conversation.save(update_fields=["title", "updated_at"])
    # After the run's INSERT: it waited for any run still finishing here, so no event can come after this.
    last_seq = last_seq_sync(conversation.pk) if owner else None
    return RunStart(run=run, message=message, last_seq=last_seq)


# -- finish ------------------------------------------------------------------------------------------


def run_finish(
    *,
    run_id: uuid.UUID,
    status: str,
    answer: str = "",
    usage: dict[str, int] | None = None,
    iterations: int = 0,
    elapsed: float = 0.0,
    stop_reason: str = "",
    error: str = "",
    summary: str | None = None,
    lease_owner: str | None = None,
) -> bool:
    """Close a running run: its status, answer and figures, the answer and any compaction summary as
    messages. Returns whether the run was closed.

    With ``lease_owner`` (the process that ran it) nothing changes unless that process still holds the
    running run: a run the sweeper declared interrupted is no longer its to close. A closed run never
    resumes, so its checkpoints are dropped (``Run.checkpoint`` keeps the last state).

    Every run ends here, in the event writer's transaction that stores its ``done``: plain SQL
    (:mod:`agents.runs.lifecycle_sql`), on PostgreSQL one statement instead of the ORM's seven.
    """
    if status not in TRANSITIONS["finish"].targets:
        raise ValueError(f"a run cannot finish as {status!r}")
    now = timezone.now()
    ended = {
        "lease_owner": "",
        "lease_expires_at": None,
        "status": status,
        "answer": answer,
        "usage": usage or {},
        "iterations": iterations,
        "elapsed": elapsed,
        "stop_reason": stop_reason[:40],
        "error": error,
        "finished_at": now,
    }
    messages = [(MessageRole.SUMMARY, summary, True)] if summary else []
    if answer:
        messages.append((MessageRole.ASSISTANT, answer, False))
    return run_end_write(run_id, ended, lease_owner, messages, now)


# -- interrupt ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunEnd:
    """The run write of a run's end (:func:`run_finish` under ``lease_owner``), made in the transaction of
    the batch that stores its ``done`` event."""

    run_id: uuid.UUID
    lease_owner: str
    fields: Mapping[str, Any]

    def apply(self) -> bool:
        return run_finish(run_id=self.run_id, lease_owner=self.lease_owner, **self.fields)


def runs_interrupt_lapsed(*, now: datetime | None = None, limit: int = 200) -> list[uuid.UUID]:
    """The sweeper: mark every running run whose lease lapsed ``interrupted`` and tell its chat."""
    now = now or timezone.now()
    candidates = list(
        addressed.runs().filter(lapsed(now), status=RunStatus.RUNNING).values_list("pk", flat=True)[:limit]
    )
    interrupted = [run_id for run_id in candidates if run_interrupt(run_id=run_id, now=now)]
    if interrupted:
        logger.warning("interrupted %d run(s) whose process stopped renewing its lease", len(interrupted))
    return interrupted


@transaction.atomic
def run_interrupt(*, run_id: uuid.UUID, now: datetime) -> bool:
    """Interrupt one running run whose lease lapsed by ``now``; its chat gets a resumable ``error``.
    False when the run is not running with a lapsed lease (or another sweeper holds it)."""
    # The row lock orders this against the last batch of a process that is slow rather than dead: its
    # fenced write either lands first (and the lease is then renewed, so nothing happens here) or fails.
    run = (
        addressed.runs()
        .select_for_update(skip_locked=True)
        .filter(lapsed(now), pk=run_id, status=RunStatus.RUNNING)
        .first()
    )
    if run is None:
        return False
    logger.warning("run %s interrupted: the lease of %s lapsed", run.pk, run.lease_owner or "no process")
    run.status = RunStatus.INTERRUPTED
    run.stop_reason = StopReason.INTERRUPTED
    run.lease_owner = ""
    run.lease_expires_at = None
    run.save(update_fields=["status", "stop_reason", "lease_owner", "lease_expires_at"])
    with translation.override(settings.LANGUAGE_CODE):
        message = _(
            "The server working on this answer stopped. Nothing is lost: resume the answer to continue "
            "from where it was."
        )
    event_append(
        run=run,
        channel="error",
        data={"code": INTERRUPTED_CODE, "message": message, "resumable": True},
    )
    return True


# -- resume, resume-parked ---------------------------------------------------------------------------


def run_resume(*, run_id: uuid.UUID, owner: str) -> bool:
    """Take an interrupted run back to ``running`` under ``owner``'s lease, to resume it.

    False when the run is not interrupted (someone else resumed or finished it);
    :class:`~agents.services.RunRefused` (``run_active``) when its conversation has another active run.
    """
    return _claim(run_id, owner, TRANSITIONS["resume"])


def run_resume_parked(*, run_id: uuid.UUID, owner: str) -> bool:
    """Take a parked run back to ``running`` under ``owner``'s lease (its decision arrived); False when
    it is not parked any more (another worker took it, the user cancelled it)."""
    return _claim(run_id, owner, TRANSITIONS["resume-parked"])


def _claim(run_id: uuid.UUID, owner: str, transition: Transition) -> bool:
    try:
        with transaction.atomic():
            claimed = (
                addressed.runs()
                .filter(pk=run_id, status__in=list(transition.sources))
                .update(
                    status=RunStatus.RUNNING,
                    lease_owner=owner,
                    lease_expires_at=lease_until(),
                    parked_on=None,
                    stop_reason="",
                    finished_at=None,
                    resumes=F("resumes") + 1,
                )
            )
    except IntegrityError as exc:
        raise RunRefused("run_active", _("The agent is already answering in this conversation.")) from exc
    return bool(claimed)


# -- park, cancel ------------------------------------------------------------------------------------


@transaction.atomic
def run_park(*, run_id: uuid.UUID, owner: str, approval_id: Any) -> bool:
    """Park a running run of ``owner`` on ``approval_id``; False if the run is no longer its own.

    Its last checkpoint holds the pending call; it keeps its conversation (follow-ups sent meanwhile are
    stored and taken in when it resumes). The decision may have landed while the run was parking: the
    caller then claims it back (:func:`agents.runs.parking.parked_run_claim`).
    """
    parked = (
        addressed.runs()
        .filter(pk=run_id, status=RunStatus.RUNNING, lease_owner=owner)
        .update(
            status=RunStatus.PARKED,
            parked_on=approval_id,
            lease_owner="",
            lease_expires_at=None,
            stop_reason=StopReason.PARKED,
        )
    )
    if parked:
        logger.info("run %s parked on approval %s", run_id, approval_id)
    return bool(parked)


@transaction.atomic
def run_cancel_parked(*, run_id: uuid.UUID) -> bool:
    """Cancel a parked run (the user stopped it): its request is cancelled, the chat gets the
    ``approval`` cancelled and a cancelled ``done``; False when the run is not parked any more."""
    run = addressed.runs().select_for_update().filter(pk=run_id, status=RunStatus.PARKED).first()
    if run is None:
        return False
    run.status = RunStatus.CANCELLED
    run.stop_reason = StopReason.CANCELLED
    run.finished_at = timezone.now()
    approval_id, run.parked_on = run.parked_on, None
    run.save(update_fields=["status", "stop_reason", "finished_at", "parked_on"])
    approval = approvals().filter(pk=approval_id).first() if approval_id else None
    if approval is not None and approval_cancel(approval=approval):
        approval.refresh_from_db()
        data = approval_event_data(approval, approval.tool_call_id, approval_approvers(approval), None)
        event_append(run=run, channel="approval", data=data)
    checkpoint = run.checkpoint or {}
    done = events.done(
        "",
        int(checkpoint.get("iteration") or 0),
        checkpoint.get("usage") or {},
        float(checkpoint.get("elapsed") or 0.0),
        cancelled=True,
        stop_reason=StopReason.CANCELLED,
    )
    event_append(run=run, channel=done.channel, data=done.data)
    return True
