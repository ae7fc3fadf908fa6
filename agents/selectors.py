"""Read helpers of the agents app."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from django.db import connection
from django.db.models import Q, QuerySet

from agents.attachments.reading import message_parts
from agents.attachments.selectors import attachments_of_messages
from agents.engine.attachments import question_content
from agents.engine.llm import Message as EngineMessage
from agents.models import ACTIVE_RUN_STATUSES, Agent, Conversation, Message, MessageRole, Run, RunStatus
from agents.sql import column, prep, table
from platform_core.models import Membership

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def conversation_for_user(*, user: User, conversation_id: uuid.UUID | str) -> Conversation | None:
    """The conversation if ``user`` owns it and is still a member of its organisation; else None."""
    if not user.is_authenticated:
        return None
    try:
        conversation_uuid = uuid.UUID(str(conversation_id))
    except ValueError:
        return None
    # A conversation is its user's: found by its id and owner in any organisation, then kept only while
    # the user is still a member of the conversation's one.
    conversation = (
        Conversation.objects.unscoped()
        .select_related("agent", "organization")
        .filter(pk=conversation_uuid, user=user)
        .first()
    )
    if conversation is None:
        return None
    if not Membership.objects.filter(user=user, organization_id=conversation.organization_id).exists():
        return None
    return conversation


def conversation_list_for_user(
    *, user: User, organization_id: int, search: str = ""
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


def active_run_for_conversation(*, conversation: Conversation) -> Run | None:
    """The conversation's running or parked run (messages sent now become its follow-ups)."""
    return Run.objects.filter(conversation=conversation, status__in=ACTIVE_RUN_STATUSES).first()


def run_to_resume(*, conversation: Conversation, run_id: uuid.UUID | str | None = None) -> Run | None:
    """The conversation's interrupted run to resume: the one named, else its newest one, provided no
    later run has started since (a newer run means the user moved on)."""
    runs = Run.objects.filter(conversation=conversation).order_by("-started_at")
    newest = runs.first()
    if newest is None or newest.status != RunStatus.INTERRUPTED:
        return None
    if run_id is not None and str(newest.pk) != str(run_id):
        return None
    return newest


def engine_history(
    *,
    conversation_id: uuid.UUID,
    before_message_id: int,
    organization_id: int | None = None,
    search_tool: str | None = None,
) -> list[EngineMessage]:
    """The conversation before a message, as the engine's chat messages.

    Starts from the newest compaction summary (pinned, so later compactions keep it) and continues with
    the user messages and answers since the run that produced it. Follow-ups are pinned. A user message
    sent with attachments carries them after its text (:func:`agents.attachments.reading.message_parts`;
    with ``organization_id``, the conversation's; ``search_tool``: the tool that searches its long
    documents, named in their notes). One statement (the summary, where its run starts, and
    the messages since), and one for the attachments of all those messages.
    """
    history: list[EngineMessage] = []
    rest: list[EngineMessage] = []
    users: dict[int, EngineMessage] = {}
    with connection.cursor() as cursor:
        cursor.execute(_history_sql(), _history_params(conversation_id, before_message_id))
        for message_id, role, content, pinned in cursor.fetchall():
            if role == MessageRole.SUMMARY:
                history.append({"role": "user", "content": content, "_summary": True, "_pinned": True})
                continue
            entry: EngineMessage = {"role": role, "content": content}
            if pinned:
                entry["_pinned"] = True
            if role == MessageRole.USER:
                users[message_id] = entry
            rest.append(entry)
    if organization_id is not None and users:
        attached = attachments_of_messages(organization_id=organization_id, message_ids=users, with_text=True)
        for message_id, attachments in attached.items():
            entry = users[message_id]
            parts = message_parts(attachments, search_tool=search_tool).parts
            entry["content"] = question_content(entry["content"], parts)
    history.extend(rest)
    return history


def _history_sql() -> str:
    # s: the newest summary before the message; the history starts at the first message of its run (else
    # at the summary, else at the beginning), and of the summaries only s is in it.
    t, mid, run, role = table(Message), column(Message, "id"), column(Message, "run"), column(Message, "role")
    return (
        f"WITH s AS (SELECT {mid} AS id, {run} AS run_id FROM {t} "
        f"WHERE {column(Message, 'conversation')} = %s AND {mid} < %s AND {role} = %s "
        f"ORDER BY {mid} DESC LIMIT 1) "
        f"SELECT m.{mid}, m.{role}, m.{column(Message, 'content')}, m.{column(Message, 'pinned')} FROM {t} m "
        f"WHERE m.{column(Message, 'conversation')} = %s AND m.{mid} < %s "
        f"AND m.{mid} >= COALESCE("
        f"(SELECT MIN(f.{mid}) FROM {t} f WHERE f.{run} = (SELECT run_id FROM s)), "
        # a summary whose run was deleted: as the ORM's run_id=None did, the first run-less message
        f"CASE WHEN EXISTS (SELECT 1 FROM s WHERE run_id IS NULL) "
        f"THEN (SELECT MIN(n.{mid}) FROM {t} n WHERE n.{run} IS NULL) END, "
        f"(SELECT id FROM s), 0) "
        f"AND (m.{role} <> %s OR m.{mid} = (SELECT id FROM s)) "
        f"ORDER BY m.{mid}"
    )


def _history_params(conversation_id: uuid.UUID, before_message_id: int) -> list[Any]:
    conversation = prep(Message, "conversation", conversation_id)
    return [
        conversation,
        before_message_id,
        MessageRole.SUMMARY,
        conversation,
        before_message_id,
        MessageRole.SUMMARY,
    ]
