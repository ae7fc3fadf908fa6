"""Write services of the agents app: conversations and their messages (a run's status changes are in
:mod:`agents.runs.lifecycle`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext as _

from agents.attachments.services import attachments_delete_for_conversation
from agents.models import ACTIVE_RUN_STATUSES, Agent, Conversation, Message, MessageRole, Run
from platform_core.models import Organization

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class RunRefused(Exception):
    """A run could not start; ``code`` and the (translated) message go to the client as an error event."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def max_message_chars() -> int:
    return int(getattr(settings, "AGENT_MAX_MESSAGE_CHARS", 20000))


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
    *, organization: Organization, user: User, agent: Agent, title: str = ""
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
    """Delete ``conversation`` with its messages, runs and attachments (their files once the deletion
    commits), unless its agent is still answering."""
    locked = (
        Conversation.objects.for_org(conversation.organization_id)
        .select_for_update()
        .filter(pk=conversation.pk)
        .first()
    )
    if locked is None:
        return
    if Run.objects.filter(conversation=locked, status__in=ACTIVE_RUN_STATUSES).exists():
        raise RunRefused(
            "run_active", _("The agent is still answering in this conversation. Stop it before deleting.")
        )
    attachments_delete_for_conversation(conversation=locked, actor=locked.user)
    locked.delete()


def message_add_follow_up(*, run: Run, content: str) -> Message:
    """Record a follow-up the user sent while ``run`` was working (the run takes it in; stored with
    ``injected=True``, the column's name)."""
    return Message.objects.create(
        conversation_id=run.conversation_id,
        run=run,
        role=MessageRole.USER,
        content=content,
        pinned=True,
        injected=True,
    )
