"""Changes to a knowledge base's settings, in one audited transaction.

A knowledge base's identity lives on its connector (:mod:`connectors.knowledge.kind`): its name (its tool
is ``<name>__search``), its description (what the model reads) and its activity (whether agents may
search it). :func:`knowledge_base_update` changes those and the knowledge base's own settings (embedding
and rerank endpoints, restriction, members, groups) together, validated as the connector and the
knowledge base validate themselves, and records one ``knowledge_base.updated`` audit row holding both
sides' changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum
from typing import TYPE_CHECKING, Any

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import transaction
from django.db.models import F
from django.utils.translation import gettext as _

from agents.knowledge.models import Document, DocumentStatus, KnowledgeBase
from agents.knowledge.tasks import ingestion_queue
from agents.knowledge.vector_index import vectors_delete
from platform_core.audit.audited import audit_entity, audit_state
from platform_core.audit.log import audit_log_write
from platform_core.models import MemberGroup, Membership, Organization

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from agents.models import ModelConfig
    from connectors.models import Connector


class Keep(Enum):
    """An argument of :func:`knowledge_base_update` left out: the setting keeps its value."""

    KEEP = "keep"


KEEP = Keep.KEEP
_CONNECTOR_FIELDS = ("name", "description", "is_active", "allowed_private_hosts")
EMBEDDING_ROLE = "embedding"  # agents.models.ModelRole.EMBEDDING (agents.models imports this package)
RERANK_ROLE = "rerank"  # agents.models.ModelRole.RERANK


def embedding_endpoint_error(*, organization_id: int, endpoint: ModelConfig | None) -> str | None:
    """Why ``endpoint`` cannot be a knowledge base's embedding endpoint (``None``: it can, or none)."""
    if endpoint is None:
        return None
    if endpoint.organization_id != organization_id or endpoint.role != EMBEDDING_ROLE:
        return _("Choose one of the organisation's model endpoints of role “embedding”.")
    return None


def rerank_endpoint_error(*, organization_id: int, endpoint: ModelConfig | None) -> str | None:
    """Why ``endpoint`` cannot be a knowledge base's rerank endpoint (``None``: it can, or none)."""
    if endpoint is None:
        return None
    if endpoint.organization_id != organization_id or endpoint.role != RERANK_ROLE:
        return _("Choose one of the organisation's model endpoints of role “rerank”.")
    return None


def members_error(*, organization_id: int, members: Iterable[User]) -> str | None:
    """Why ``members`` cannot be given access (``None``: they are all members of the organisation)."""
    ids = {user.pk for user in members}
    found = set(
        Membership.objects.filter(organization_id=organization_id, user_id__in=ids).values_list(
            "user_id", flat=True
        )
    )
    if ids - found:
        return _("Only members of the organisation can be given access.")
    return None


def groups_error(*, organization_id: int, groups: Iterable[MemberGroup]) -> str | None:
    """Why ``groups`` cannot be given access (``None``: they are all groups of the organisation)."""
    if any(group.organization_id != organization_id for group in groups):
        return _("Choose groups of this organisation.")
    return None


def knowledge_base_state(knowledge_base: KnowledgeBase) -> dict[str, Any]:
    """The audit view of a knowledge base: its own fields and members, and its connector's identity."""
    state = audit_state(knowledge_base)
    connector = knowledge_base.connector
    state.update({name: getattr(connector, name) for name in _CONNECTOR_FIELDS})
    return state


def knowledge_base_update(
    *,
    knowledge_base: KnowledgeBase,
    actor: User | None,
    name: str | Keep = KEEP,
    description: str | Keep = KEEP,
    is_active: bool | Keep = KEEP,
    embedding_endpoint: ModelConfig | None | Keep = KEEP,
    rerank_endpoint: ModelConfig | None | Keep = KEEP,
    restricted: bool | Keep = KEEP,
    members: Iterable[User] | Keep = KEEP,
    groups: Iterable[MemberGroup] | Keep = KEEP,
    allowed_private_hosts: list[str] | Keep = KEEP,
    ip_address: str | None = None,
) -> KnowledgeBase:
    """Change the settings given (the others keep their values). ``ValidationError`` says what is wrong,
    on the field at fault (a name that is not a connector name, an endpoint that is not the
    organisation's); nothing is saved then. No audit row when nothing changed."""
    org_id = knowledge_base.organization_id
    if members is not KEEP:
        members = list(members)
    if groups is not KEEP:
        groups = list(groups)
    refuse_wrong_access(
        organization_id=org_id,
        embedding_endpoint=embedding_endpoint,
        rerank_endpoint=rerank_endpoint,
        members=members,
        groups=groups,
    )
    with transaction.atomic():
        stored = (
            KnowledgeBase.objects.for_org(org_id)
            .select_for_update()
            .select_related("connector")
            .get(pk=knowledge_base.pk)
        )
        before = knowledge_base_state(stored)
        connector = knowledge_base.connector
        for field, value in (
            ("name", name),
            ("description", description),
            ("is_active", is_active),
            ("allowed_private_hosts", allowed_private_hosts),
        ):
            if value is not KEEP:
                setattr(connector, field, value)
        if embedding_endpoint is not KEEP:
            knowledge_base.embedding_endpoint = embedding_endpoint
        if rerank_endpoint is not KEEP:
            knowledge_base.rerank_endpoint = rerank_endpoint
        if restricted is not KEEP:
            knowledge_base.restricted = restricted
        _connector_clean(connector)
        knowledge_base.full_clean(exclude=["members", "groups"])
        connector.save()
        if knowledge_base.embedding_endpoint_id != stored.embedding_endpoint_id:
            embedding_restart(knowledge_base)
        knowledge_base.save()
        if members is not KEEP:
            knowledge_base.members.set(members)
        if groups is not KEEP:
            knowledge_base.groups.set(groups)
        after = knowledge_base_state(knowledge_base)
        changed = [key for key in after if before.get(key) != after[key]]
        if changed:
            audit_log_write(
                organization=Organization.objects.get(pk=org_id),
                actor=actor,
                action=f"{audit_entity(KnowledgeBase)}.updated",
                target=knowledge_base,
                before={key: before.get(key) for key in changed},
                after={key: after[key] for key in changed},
                ip_address=ip_address,
            )
    return knowledge_base


def embedding_restart(knowledge_base: KnowledgeBase) -> None:
    """Another embedding endpoint (or none): the old vectors go, and every document is indexed again in
    the background, embedded by the new endpoint (its model and dimension are the knowledge base's once
    the first document is). Until then searches rank by keyword alone. Inside the caller's transaction;
    the documents are queued once it commits."""
    org_id = knowledge_base.organization_id
    knowledge_base.embedding_model = ""
    knowledge_base.embedding_dimension = None
    vectors_delete(organization_id=org_id, knowledge_base_id=knowledge_base.pk)
    documents = Document.objects.for_org(org_id).filter(knowledge_base_id=knowledge_base.pk)
    ids = list(documents.values_list("pk", flat=True))
    documents.update(status=DocumentStatus.QUEUED, attempts=0, version=F("version") + 1)
    transaction.on_commit(lambda: _queue_all(ids))


def _queue_all(document_ids: list[Any]) -> None:
    for document_id in document_ids:
        ingestion_queue(document_id)


def refuse_wrong_access(
    *,
    organization_id: int,
    embedding_endpoint: ModelConfig | None | Keep,
    rerank_endpoint: ModelConfig | None | Keep = KEEP,
    members: list[User] | Keep = KEEP,
    groups: list[MemberGroup] | Keep = KEEP,
) -> None:
    """Raise a ``ValidationError`` on each field given a value that is not the organisation's: an endpoint
    of another organisation or role, someone who is no member, a group of another organisation."""
    errors: dict[str, str] = {}
    if embedding_endpoint is not KEEP:
        problem = embedding_endpoint_error(organization_id=organization_id, endpoint=embedding_endpoint)
        if problem:
            errors["embedding_endpoint"] = problem
    if rerank_endpoint is not KEEP:
        problem = rerank_endpoint_error(organization_id=organization_id, endpoint=rerank_endpoint)
        if problem:
            errors["rerank_endpoint"] = problem
    if members is not KEEP:
        problem = members_error(organization_id=organization_id, members=members)
        if problem:
            errors["members"] = problem
    if groups is not KEEP:
        problem = groups_error(organization_id=organization_id, groups=groups)
        if problem:
            errors["groups"] = problem
    if errors:
        raise ValidationError(errors)


def _connector_clean(connector: Connector) -> None:
    """Validate the connector as knowledge_base_create does (its kind is the knowledge base's), with a
    name another connector holds reported on ``name`` rather than on the whole row."""
    try:
        connector.full_clean(exclude=["kind"])
    except ValidationError as exc:
        errors = exc.update_error_dict({})
        taken = errors.pop(NON_FIELD_ERRORS, [])
        if taken:
            errors.setdefault("name", []).extend(taken)
        raise ValidationError(errors) from exc
