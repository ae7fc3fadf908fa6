"""Write services of the agents app: conversations, runs, their messages and results."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from agents.event_sql import run_end_write
from agents.models import ACTIVE_RUN_STATUSES, Agent, Conversation, Message, MessageRole, Run, RunStatus
from platform_core.models import Organization

TITLE_CHARS = 80


class RunRefused(Exception):
    """A run could not start; ``code`` and the (translated) message go to the client as an error event."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def max_message_chars() -> int:
    return int(getattr(settings, "AGENT_MAX_MESSAGE_CHARS", 20000))


def max_concurrent_runs_per_user() -> int:
    return int(getattr(settings, "AGENT_MAX_CONCURRENT_RUNS_PER_USER", 3))


def message_content_check(content: Any) -> str:
    """The message text, or :class:`RunRefused` with a clear reason."""
    if not isinstance(content, str) or not content.strip():
        raise RunRefused("empty_message", _("The message is empty."))
    if len(content) > max_message_chars():
        raise RunRefused(
            "message_too_large",
            _("The message is too long (%(size)d characters; the limit is %(limit)d).")
            % {"size": len(content), "limit": max_message_chars()},
        )
    return content


@transaction.atomic
def conversation_create(
    *, organization: Organization, user: AbstractBaseUser, agent: Agent, title: str = ""
) -> Conversation:
    """Start a conversation of ``user`` with ``agent`` (which must belong to ``organization``)."""
    if agent.organization_id != organization.pk or not agent.active:
        raise RunRefused("agent_unavailable", _("This agent is not available."))
    return Conversation.objects.create(organization=organization, user=user, agent=agent, title=title[:200])


@transaction.atomic
def conversation_rename(*, conversation: Conversation, title: str) -> Conversation:
    """Give ``conversation`` a new title (one line, at most 200 characters; refused when blank)."""
    cleaned = " ".join(str(title).split())[:200]
    if not cleaned:
        raise RunRefused("empty_title", _("The title is empty."))
    conversation.title = cleaned
    conversation.save(update_fields=["title"])  # renaming does not make it the newest conversation
    return conversation


@transaction.atomic
def conversation_delete(*, conversation: Conversation) -> None:
    """Delete ``conversation`` with its messages and runs, unless its agent is still answering."""
    locked = Conversation.objects.select_for_update().filter(pk=conversation.pk).first()
    if locked is None:
        return
    if Run.objects.filter(conversation=locked, status__in=ACTIVE_RUN_STATUSES).exists():
        raise RunRefused(
            "run_active", _("The agent is still answering in this conversation. Stop it before deleting.")
        )
    locked.delete()


@dataclass(frozen=True)
class RunStart:
    run: Run
    message: Message


@transaction.atomic
def run_start(*, conversation: Conversation, user: AbstractBaseUser, content: str) -> RunStart:
    """Record the user's message and a new running run for it.

    Refused while the conversation has a running run (the database's partial unique index decides
    when two processes race) or when the user already has the maximum number of running runs.
    """
    content = message_content_check(content)
    if not conversation.agent.active:
        raise RunRefused("agent_unavailable", _("This agent is not available."))
    running = Run.objects.filter(user=user, status=RunStatus.RUNNING).count()
    if running >= max_concurrent_runs_per_user():
        raise RunRefused(
            "too_many_runs",
            _("You already have %(count)d answers in progress; wait for one to finish.") % {"count": running},
        )
    try:
        with transaction.atomic():
            run = Run.objects.create(
                organization_id=conversation.organization_id, conversation=conversation, user=user
            )
    except IntegrityError as exc:
        raise RunRefused("run_active", _("The agent is already answering in this conversation.")) from exc
    message = Message.objects.create(
        conversation=conversation, run=run, role=MessageRole.USER, content=content
    )
    if not conversation.title:
        conversation.title = content.strip().splitlines()[0][:TITLE_CHARS]
    conversation.save(update_fields=["title", "updated_at"])
    return RunStart(run=run, message=message)


def message_add_injected(*, run_id: uuid.UUID, content: str) -> Message:
    """Record a follow-up the user sent while ``run_id`` was working (it is injected into that run)."""
    run = Run.objects.select_related("conversation").get(pk=run_id)
    return Message.objects.create(
        conversation=run.conversation,
        run=run,
        role=MessageRole.USER,
        content=content,
        pinned=True,
        injected=True,
    )


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
    """Close a run: its status, answer and figures, the answer and any compaction summary as messages.
    Returns whether the run was closed.

    With ``lease_owner`` (the process that ran it) nothing changes unless that process still holds the
    running run: a run the sweeper declared interrupted is no longer its to close. A closed run never
    resumes, so its checkpoints are dropped (``Run.checkpoint`` keeps the last state).

    Every run ends here, in the event writer's transaction: its statements are plain SQL
    (:mod:`agents.event_sql`): on PostgreSQL one, instead of the ORM's seven.
    """
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
