"""Writes of memories, each scoped to one person of one organisation, in one transaction with its audit
row: remember (a run's tool, or the person), change, forget, and the retention sweep's deletions.

The audit log records who wrote, changed or deleted which memory and how (by an agent, by the person,
by retention), with its length: never its text.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db import transaction
from django.utils.translation import gettext as _

from agents.knowledge.terms import search_terms
from agents.memory.limits import MAX_MEMORIES_PER_USER, TEXT_MAX_CHARS
from agents.memory.models import Memory, MemoryOrigin
from platform_core.audit.log import audit_log_write
from platform_core.models import Organization

if TYPE_CHECKING:
    from django.contrib.auth.models import User

__all__ = [
    "MemoryRefused",
    "MemorySaved",
    "memory_create",
    "memory_delete",
    "memory_text_problem",
    "memory_update",
]


@dataclass(frozen=True, slots=True)
class MemorySaved:
    memory: Memory
    created: bool  # false: the person already had a memory of that text, kept as it was


@dataclass(frozen=True, slots=True)
class MemoryRefused:
    """Why the memory was not kept, in the person's language."""

    reason: str


def memory_text_problem(text: str) -> str | None:
    """What is wrong with ``text`` as a memory (empty, too long), or ``None``."""
    if not text.strip():
        return _("A memory needs some text.")
    if len(text) > TEXT_MAX_CHARS:
        return _("A memory holds at most %(limit)d characters.") % {"limit": TEXT_MAX_CHARS}
    return None


def _state(memory: Memory) -> dict[str, object]:
    """What the audit log keeps of a memory: whose, from where and how long, never the text."""
    return {
        "user": memory.user_id,
        "origin": memory.origin,
        "agent": str(memory.agent_id) if memory.agent_id else None,
        "conversation": str(memory.conversation_id) if memory.conversation_id else None,
        "length": len(memory.text),
    }


def memory_create(
    *,
    organization_id: int,
    user_id: int,
    text: str,
    origin: str = MemoryOrigin.PERSON,
    agent_id: uuid.UUID | None = None,
    conversation_id: uuid.UUID | None = None,
    actor: User | None = None,
    ip_address: str | None = None,
) -> MemorySaved | MemoryRefused:
    """Keep ``text`` for ``user_id``: a new memory, or the one of the same text they already have."""
    text = text.strip()
    problem = memory_text_problem(text)
    if problem is not None:
        return MemoryRefused(problem)
    mine = Memory.objects.for_org(organization_id).filter(user_id=user_id)
    same = mine.filter(text=text).first()
    if same is not None:
        return MemorySaved(memory=same, created=False)
    if mine.count() >= MAX_MEMORIES_PER_USER:
        return MemoryRefused(
            _("You keep %(limit)d memories already: delete some on the memory page first.")
            % {"limit": MAX_MEMORIES_PER_USER}
        )
    with transaction.atomic():
        memory = Memory.objects.create(
            organization_id=organization_id,
            user_id=user_id,
            text=text,
            terms=" ".join(search_terms(text)),
            origin=origin,
            agent_id=agent_id,
            conversation_id=conversation_id,
        )
        audit_log_write(
            organization=Organization.objects.get(pk=organization_id),
            actor=actor,
            action="memory.created",
            target=memory,
            after=_state(memory),
            ip_address=ip_address,
        )
    return MemorySaved(memory=memory, created=True)


def memory_update(
    *, memory: Memory, text: str, actor: User | None, ip_address: str | None = None
) -> MemorySaved | MemoryRefused:
    """Change a memory's text (its person's own change)."""
    text = text.strip()
    problem = memory_text_problem(text)
    if problem is not None:
        return MemoryRefused(problem)
    if text == memory.text:
        return MemorySaved(memory=memory, created=False)
    before = _state(memory)
    with transaction.atomic():
        memory.text = text
        memory.terms = " ".join(search_terms(text))
        memory.save(update_fields=["text", "terms", "updated_at"])
        audit_log_write(
            organization=Organization.objects.get(pk=memory.organization_id),
            actor=actor,
            action="memory.updated",
            target=memory,
            before=before,
            after=_state(memory),
            ip_address=ip_address,
        )
    return MemorySaved(memory=memory, created=False)


def memory_delete(
    *, memory: Memory, actor: User | None, reason: str = "person", ip_address: str | None = None
) -> None:
    """Delete a memory: no model is given it again. ``reason``: ``person`` or ``retention``."""
    with transaction.atomic():
        audit_log_write(
            organization=Organization.objects.get(pk=memory.organization_id),
            actor=actor,
            action="memory.deleted",
            target=memory,
            before={**_state(memory), "reason": reason},
            ip_address=ip_address,
        )
        memory.delete()
