"""Reads of chat attachments, org-scoped, with who may see them.

An attachment is its conversation's: while pending (not sent yet) only its uploader sees it, once sent
only the conversation's owner (a conversation is its user's alone: :func:`agents.selectors.conversation_for_user`),
and either only while still a member of the organisation. An orphan (its conversation deleted by a
cascade) is seen by nobody. The rule is applied here once, for every reader: the REST API, the web
download, and the later entry points that read attachments for a run.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db.models import Exists, OuterRef, Q, QuerySet, Sum

from agents.attachments.models import Attachment
from agents.attachments.refusals import AttachmentRefusal, AttachmentRefused
from platform_core.models import Membership

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

    from agents.models import Conversation


def attachments_visible_to(*, organization_id: int, user: User | AnonymousUser) -> QuerySet[Attachment]:
    """The organisation's attachments ``user`` may see: their pending uploads and the attachments of their
    conversations; none for anyone who is not (or no longer) a member."""
    if (
        not user.is_authenticated
        or not Membership.objects.filter(user_id=user.pk, organization_id=organization_id).exists()
    ):
        return Attachment.objects.for_org(organization_id).none()
    return (
        Attachment.objects.for_org(organization_id)
        .filter(
            Q(bound_at__isnull=True, conversation__isnull=True, uploaded_by_id=user.pk)
            | Q(conversation__user_id=user.pk, conversation__organization_id=organization_id)
        )
        .defer("text")  # what runs read; its readers do not show it
    )


def attachment_visible_to(
    *, organization_id: int, user: User | AnonymousUser, attachment_id: Any
) -> Attachment | None:
    """The attachment, when it exists in the organisation and ``user`` may see it."""
    try:
        wanted = uuid.UUID(str(attachment_id))
    except ValueError:
        return None
    return attachments_visible_to(organization_id=organization_id, user=user).filter(pk=wanted).first()


def attachments_of_message(*, organization_id: int, message_id: int) -> QuerySet[Attachment]:
    """The attachments sent with one message, in the order the sender listed them."""
    return (
        Attachment.objects.for_org(organization_id)
        .filter(message_id=message_id)
        .order_by("position", "created_at", "pk")
    )


def attachments_of_messages(
    *, organization_id: int, message_ids: Iterable[int], with_text: bool = False
) -> dict[int, list[Attachment]]:
    """Each message's attachments (one query for a page of the history); ``with_text``: with the text
    their runs read (for a run's history, not for a listing)."""
    found: dict[int, list[Attachment]] = {}
    rows = (
        Attachment.objects.for_org(organization_id)
        .filter(message_id__in=list(message_ids))
        .order_by("position", "created_at", "pk")
    )
    if not with_text:
        rows = rows.defer("text")
    for attachment in rows:
        if attachment.message_id is not None:
            found.setdefault(attachment.message_id, []).append(attachment)
    return found


def conversation_has_attachments() -> Exists:
    """An annotation of a conversation query: whether the conversation holds any attachment."""
    return Exists(
        Attachment.objects.for_org(OuterRef("organization_id")).filter(conversation_id=OuterRef("pk"))  # type: ignore[arg-type]  # the outer row's organisation
    )


def conversation_has_attachments_sync(conversation: Conversation) -> bool:
    """Whether ``conversation`` holds any attachment."""
    return (
        Attachment.objects.for_org(conversation.organization_id)
        .filter(conversation_id=conversation.pk)
        .exists()
    )


def attachment_storage_used(*, organization_id: int) -> int:
    """Bytes the organisation's attachments take (what its quota counts)."""
    total = Attachment.objects.for_org(organization_id).aggregate(total=Sum("size"))["total"]
    return int(total or 0)


@dataclass(frozen=True, slots=True)
class AttachmentsBindable:
    """The attachments may be sent with a message, in the order asked."""

    attachments: tuple[Attachment, ...]

    @property
    def size(self) -> int:
        return sum(attachment.size for attachment in self.attachments)


def attachments_bindable(
    *,
    organization_id: int,
    user: User,
    attachment_ids: Sequence[uuid.UUID | str],
    max_message_bytes: int,
    lock: bool = False,
) -> AttachmentsBindable | AttachmentRefused:
    """Whether ``user`` may send these attachments with one message: each exists in the organisation, is
    their own upload, is still pending, and together they fit ``max_message_bytes``. ``lock`` holds their
    rows (inside the caller's transaction) until it ends."""
    wanted: list[uuid.UUID] = []
    for raw in attachment_ids:
        try:
            value = uuid.UUID(str(raw))
        except ValueError:
            return AttachmentRefused(AttachmentRefusal.NOT_FOUND, {"attachment": str(raw)[:64]})
        if value not in wanted:
            wanted.append(value)
    if not wanted:
        return AttachmentsBindable(())
    if not Membership.objects.filter(user_id=user.pk, organization_id=organization_id).exists():
        return AttachmentRefused(AttachmentRefusal.NOT_FOUND, {"attachment": str(wanted[0])})
    rows = Attachment.objects.for_org(organization_id).filter(pk__in=wanted, uploaded_by_id=user.pk)
    if lock:
        rows = rows.select_for_update()
    found = {attachment.pk: attachment for attachment in rows}
    for value in wanted:
        attachment = found.get(value)
        if attachment is None:
            return AttachmentRefused(AttachmentRefusal.NOT_FOUND, {"attachment": str(value)})
        if not attachment.pending or attachment.conversation_id is not None:
            return AttachmentRefused(AttachmentRefusal.ALREADY_BOUND, {"attachment": str(value)})
    bindable = AttachmentsBindable(tuple(found[value] for value in wanted))
    if bindable.size > max_message_bytes:
        return AttachmentRefused(
            AttachmentRefusal.ATTACHMENTS_TOO_LARGE, {"size": bindable.size, "limit": max_message_bytes}
        )
    return bindable
