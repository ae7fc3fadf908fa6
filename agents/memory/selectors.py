"""Reads of memories: a person's own, in one organisation, and only while they are a member of it.

A memory is read for nobody but its person: the REST API and the memory page both start here, so another
person's memory (of the same organisation or not) is the missing memory of every route.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from django.db.models import QuerySet

from agents.memory.models import Memory
from platform_core.models import Membership

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

__all__ = ["memories_of_person", "memory_get_for_person", "memory_search"]

SEARCH_MAX_WORDS = 8


def memories_of_person(*, organization_id: int, user: User | AnonymousUser) -> QuerySet[Memory]:
    """``user``'s memories in the organisation, newest written first, with their agents; none for anyone
    who is not (or no longer) a member."""
    memories = Memory.objects.for_org(organization_id)
    if (
        not user.is_authenticated
        or not Membership.objects.filter(user_id=user.pk, organization_id=organization_id).exists()
    ):
        return memories.none()
    return memories.filter(user_id=user.pk).select_related("agent").order_by("-created_at", "-pk")


def memory_search(memories: QuerySet[Memory], search: str) -> QuerySet[Memory]:
    """``memories`` whose text contains every word of ``search`` (any case)."""
    for word in str(search).split()[:SEARCH_MAX_WORDS]:
        memories = memories.filter(text__icontains=word)
    return memories


def memory_get_for_person(
    *, organization_id: int, user: User | AnonymousUser, memory_id: uuid.UUID | str
) -> Memory | None:
    """One of ``user``'s memories in the organisation; ``None`` for a missing one and anyone else's."""
    try:
        wanted = uuid.UUID(str(memory_id))
    except ValueError:
        return None
    return memories_of_person(organization_id=organization_id, user=user).filter(pk=wanted).first()
