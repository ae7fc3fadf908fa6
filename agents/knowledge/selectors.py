"""Reads of knowledge bases, org-scoped, with who may read them.

A knowledge base that is not ``restricted`` is open to every member of its organisation; a restricted one
only to its listed members and to the members of its listed groups (issue 34). Either way the reader must
be a member of the organisation now: someone who left it reads nothing, whatever rows still name them.
That rule is applied here once, for every reader: a run's tools, a search, the documents' download. The organisation's chat files (``KnowledgeBaseKind.CHAT_FILES``) are none of
these readers' unless asked for by kind: only a conversation's own search reads them
(:mod:`agents.attachments.search`), and only its conversation's documents.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from django.db.models import Exists, OuterRef, Q, QuerySet

from agents.knowledge.models import Document, DocumentStatus, KnowledgeBase, KnowledgeBaseKind
from connectors.models import Connector, ConnectorKind
from platform_core.models import Membership


def _readable(organization_id: int, user_id: int | None) -> Q:
    """Who may read: anyone for an unrestricted knowledge base when no user is named (a run without one);
    else a current member of the organisation, for a restricted one listed or in a listed group."""
    if user_id is None:
        return Q(restricted=False)
    current = Membership.objects.filter(organization_id=organization_id, user_id=user_id)
    listed = KnowledgeBase.members.through.objects.filter(knowledgebase_id=OuterRef("pk"), user_id=user_id)
    in_group = KnowledgeBase.groups.through.objects.filter(
        knowledgebase_id=OuterRef("pk"),
        membergroup__organization_id=organization_id,
        membergroup__members=user_id,
    )
    return Q(Exists(current)) & (Q(restricted=False) | Q(Exists(listed)) | Q(Exists(in_group)))


LIBRARIES: tuple[str, ...] = (KnowledgeBaseKind.LIBRARY,)


def knowledge_bases_readable(
    *, organization_id: int, user_id: int | None, kinds: Collection[str] = LIBRARIES
) -> QuerySet[KnowledgeBase]:
    """The organisation's knowledge bases of ``kinds`` ``user_id`` may read (connector loaded): libraries
    unless told otherwise (the chat files are read only through a conversation's own search)."""
    return (
        KnowledgeBase.objects.for_org(organization_id)
        .filter(_readable(organization_id, user_id), kind__in=list(kinds))
        .select_related("connector")
    )


def knowledge_bases_of_connectors(
    *, organization_id: int, user_id: int | None, connector_ids: Iterable[Any]
) -> list[KnowledgeBase]:
    """The readable knowledge bases among ``connector_ids`` (an agent's), whose connectors are active."""
    ids = [str(c) for c in connector_ids]
    if not ids:
        return []
    return list(
        knowledge_bases_readable(organization_id=organization_id, user_id=user_id).filter(
            connector_id__in=ids,
            connector__kind=ConnectorKind.KNOWLEDGE,
            connector__is_active=True,
            connector__organization_id=organization_id,
        )
    )


def knowledge_base_readable_ids(
    *,
    organization_id: int,
    user_id: int | None,
    knowledge_base_ids: Iterable[uuid.UUID],
    kinds: Collection[str] = LIBRARIES,
) -> list[uuid.UUID]:
    """Those of ``knowledge_base_ids`` (of ``kinds``) the user may read now (access may change while a
    run works)."""
    wanted = list(knowledge_base_ids)
    if not wanted:
        return []
    return list(
        knowledge_bases_readable(organization_id=organization_id, user_id=user_id, kinds=kinds)
        .filter(pk__in=wanted, connector__is_active=True)
        .values_list("pk", flat=True)
    )


def document_readable(*, organization_id: int, user_id: int | None, document_id: Any) -> Document | None:
    """The document, when it exists in the organisation and the user may read its knowledge base."""
    try:
        document_uuid = uuid.UUID(str(document_id))
    except ValueError:
        return None
    readable = knowledge_bases_readable(organization_id=organization_id, user_id=user_id)
    return (
        Document.objects.for_org(organization_id)
        .filter(pk=document_uuid, knowledge_base__in=readable)
        .select_related("knowledge_base__connector")
        .first()
    )


def attachable_connectors(connectors: QuerySet[Connector]) -> QuerySet[Connector]:
    """``connectors`` less the chat files' (which no agent is given: a conversation's own search uses
    it), the skill library's (an agent is given skills, and the library's tool with them) and the
    memory's (an agent's memory is switched on, and the tool comes with it)."""
    return connectors.exclude(knowledge_base__kind=KnowledgeBaseKind.CHAT_FILES).exclude(
        kind__in=[ConnectorKind.SKILLS, ConnectorKind.MEMORY]
    )


def documents_not_ready(organization_id: int, document_ids: Sequence[uuid.UUID]) -> list[str]:
    """The names of those of ``document_ids`` a search does not find yet: being indexed, or failed."""
    return list(
        Document.objects.for_org(organization_id)
        .filter(pk__in=list(document_ids))
        .exclude(status=DocumentStatus.READY)
        .order_by("name")
        .values_list("name", flat=True)
    )
