"""Read helpers of the agents app."""

from __future__ import annotations

import uuid

from django.contrib.auth.base_user import AbstractBaseUser
from django.db.models import Q, QuerySet

from agents.engine.llm import Message as EngineMessage
from agents.models import ACTIVE_RUN_STATUSES, Agent, Conversation, Message, MessageRole, Run, RunStatus
from platform_core.models import Membership


def conversation_for_user(*, user: AbstractBaseUser, conversation_id: uuid.UUID | str) -> Conversation | None:
    """The conversation if ``user`` owns it and is still a member of its organisation; else None."""
    if not user.is_authenticated:
        return None
    try:
        conversation_uuid = uuid.UUID(str(conversation_id))
    except ValueError:
        return None
    conversation = (
        Conversation.objects.select_related("agent", "organization")
        .filter(pk=conversation_uuid, user=user)
        .first()
    )
    if conversation is None:
        return None
    if not Membership.objects.filter(user=user, organization_id=conversation.organization_id).exists():
        return None
    return conversation


def conversation_list_for_user(
    *, user: AbstractBaseUser, organization_id: int, search: str = ""
) -> QuerySet[Conversation]:
    """The user's conversations in the organisation, newest first; ``search`` matches titles and agents."""
    conversations = Conversation.objects.filter(organization_id=organization_id, user=user)
    return conversation_search(conversations.select_related("agent"), search)


def conversation_search(conversations: QuerySet[Conversation], search: str) -> QuerySet[Conversation]:
    """``conversations`` whose title or agent name contains every word of ``search`` (any case)."""
    for word in str(search).split()[:8]:
        conversations = conversations.filter(Q(title__icontains=word) | Q(agent__name__icontains=word))
    return conversations


def agents_available(*, organization_id: int) -> QuerySet[Agent]:
    return Agent.objects.filter(organization_id=organization_id, active=True).order_by("name")


def active_run_for_conversation(*, conversation_id: uuid.UUID) -> Run | None:
    """The conversation's running or parked run (messages sent now become its follow-ups)."""
    return Run.objects.filter(conversation_id=conversation_id, status__in=ACTIVE_RUN_STATUSES).first()


def run_to_resume(*, conversation_id: uuid.UUID, run_id: uuid.UUID | str | None = None) -> Run | None:
    """The conversation's interrupted run to resume: the one named, else its newest one, provided no
    later run has started since (a newer run means the user moved on)."""
    runs = Run.objects.filter(conversation_id=conversation_id).order_by("-started_at")
    newest = runs.first()
    if newest is None or newest.status != RunStatus.INTERRUPTED:
        return None
    if run_id is not None and str(newest.pk) != str(run_id):
        return None
    return newest


def engine_history(*, conversation_id: uuid.UUID, before_message_id: int) -> list[EngineMessage]:
    """The conversation before a message, as the engine's chat messages.

    Starts from the newest compaction summary (pinned, so later compactions keep it) and continues with
    the user messages and answers since the run that produced it. Injected follow-ups are pinned.
    """
    messages = Message.objects.filter(conversation_id=conversation_id, id__lt=before_message_id)
    summary = (
        messages.filter(role=MessageRole.SUMMARY)
        .order_by("-id")
        .values_list("id", "run_id", "content")
        .first()
    )
    history: list[EngineMessage] = []
    if summary is not None:
        summary_id, summary_run_id, summary_content = summary
        history.append({"role": "user", "content": summary_content, "_summary": True, "_pinned": True})
        first_of_run = (
            Message.objects.filter(run_id=summary_run_id).order_by("id").values_list("id", flat=True).first()
        )
        messages = messages.filter(id__gte=first_of_run or summary_id)
    rows = messages.exclude(role=MessageRole.SUMMARY).order_by("id").values_list("role", "content", "pinned")
    for role, content, pinned in rows:
        entry: EngineMessage = {"role": role, "content": content}
        if pinned:
            entry["_pinned"] = True
        history.append(entry)
    return history
