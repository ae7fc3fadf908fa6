"""Writes of chat attachments, each org-scoped and recorded in the audit log.

An upload is checked from its bytes (:mod:`agents.attachments.sniffing`), against the per-file limit and
the organisation's quota, a document's text read once (:func:`agents.attachments.reading.document_read`:
its beginning only, when long), then its file is stored on Django's storage (the file system, or S3-compatible
object storage) and its row committed: on any refusal or error in between, the stored file is deleted
again, so nothing is ever half-stored. Its row is written in a durable transaction (never inside a
caller's): once :func:`attachment_upload` answers :class:`AttachmentStored`, the row and its file exist.

An upload stays pending until :func:`attachments_bind` sends it with a message (the sender's own pending
uploads only, within the per-message limit). Deleting rows deletes their files once the deletion commits.
The audit log records each upload, download and deletion with the file's name, size, type and SHA-256,
never its content; nothing here logs the content either.
"""

from __future__ import annotations

import hashlib
import logging
import unicodedata
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from django.core.files import File
from django.core.files.storage import Storage
from django.db import transaction
from django.utils import timezone

from agents.attachments.indexing import attachment_index
from agents.attachments.limits import attachment_limits
from agents.attachments.models import Attachment, AttachmentKind
from agents.attachments.reading import document_read
from agents.attachments.refusals import AttachmentRefusal, AttachmentRefused
from agents.attachments.selectors import attachment_storage_used, attachments_bindable
from agents.attachments.sniffing import Unfit, attachment_checked
from agents.knowledge.formats import DocumentFormat
from platform_core.audit.log import audit_log_write
from platform_core.models import Organization
from platform_core.stored_files import stored_files_delete

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from agents.models import Conversation, Message

logger = logging.getLogger(__name__)

NAME_MAX_LENGTH = 255


class DeletionReason:
    """Why attachments were deleted, as their audit rows say."""

    BY_USER = "deleted_by_user"
    CONVERSATION_DELETED = "conversation_deleted"
    NEVER_SENT = "never_sent"
    RETENTION = "retention"
    ORPHANED = "conversation_gone"


@dataclass(frozen=True, slots=True)
class AttachmentStored:
    """The file is stored and its row committed, pending until it is sent with a message."""

    attachment: Attachment


AttachmentUpload = AttachmentStored | AttachmentRefused


@dataclass(frozen=True, slots=True)
class AttachmentsBound:
    """The attachments now belong to the message and its conversation."""

    attachments: tuple[Attachment, ...]


@dataclass(frozen=True, slots=True)
class AttachmentDeleted:
    attachment: Attachment


def attachment_upload(
    *,
    organization: Organization,
    user: User,
    name: str,
    content: File,
    ip_address: str | None = None,
) -> AttachmentUpload:
    """Store ``content`` (called ``name`` by the client) as a pending attachment of ``user``, or refuse it
    (nothing stored). Call it outside any transaction: the file cannot be rolled back with one."""
    limits = attachment_limits()
    name = attachment_name_clean(name)
    size = int(content.size or 0)
    checked = attachment_checked(name, cast(BinaryIO, content), size, limits.sniffing)
    if isinstance(checked, Unfit):
        return AttachmentRefused(checked.code, dict(checked.figures))
    quota = limits.org_quota_bytes
    if quota:  # a first look, before anything is stored; checked again under the organisation's lock
        refused = _over_quota(organization.pk, size, quota)
        if refused is not None:
            return refused
    attachment = Attachment(
        id=uuid.uuid4(),
        organization=organization,
        uploaded_by=user,
        name=name,
        kind=checked.kind.value,
        format=checked.format,
        content_type=checked.content_type,
        size=size,
        sha256=_sha256(content),
    )
    if checked.kind == AttachmentKind.DOCUMENT:  # read once, here, so that no run parses the file
        content.seek(0)
        document = document_read(DocumentFormat(checked.format), cast(BinaryIO, content))
        attachment.text, attachment.text_shown = document.text, document.shown
    content.seek(0)
    # The attachment's own folder: the storage keeps the name it is given (no other file is there), so a
    # write that fails halfway can be deleted by that name.
    stored = attachment.file.field.generate_filename(attachment, name)
    try:
        attachment.file.save(name, content, save=False)
    except BaseException:
        _files_delete([stored])
        raise
    stored = attachment.file.name or stored
    try:
        with transaction.atomic(durable=True):
            # One upload of the organisation at a time passes this point, so two cannot both fit the
            # quota's last bytes.
            Organization.objects.select_for_update().filter(pk=organization.pk).first()
            refused = _over_quota(organization.pk, size, quota) if quota else None
            if refused is None:
                attachment.save(force_insert=True)
                audit_log_write(
                    organization=organization,
                    actor=user,
                    action="attachment.upload",
                    target=attachment,
                    after=attachment_details(attachment),
                    ip_address=ip_address,
                )
    except BaseException:
        _files_delete([stored])
        raise
    if refused is not None:
        _files_delete([stored])
        return refused
    try:
        attachment_index(attachment)  # a long document: searchable in its conversation once sent
    except Exception:  # the upload stands: its runs then read the beginning alone
        logger.exception("attachment %s could not be queued for indexing", attachment.pk)
    return AttachmentStored(attachment)


def _over_quota(organization_id: int, size: int, quota: int) -> AttachmentRefused | None:
    used = attachment_storage_used(organization_id=organization_id)
    if used + size <= quota:
        return None
    return AttachmentRefused(AttachmentRefusal.QUOTA_EXCEEDED, {"used": used, "quota": quota, "size": size})


def attachments_bind(
    *,
    user: User,
    conversation: Conversation,
    message: Message,
    attachment_ids: Sequence[uuid.UUID | str],
) -> AttachmentsBound | AttachmentRefused:
    """Send ``user``'s pending uploads ``attachment_ids`` with ``message`` of their ``conversation``: each
    must be their own, pending, of the conversation's organisation, and all of them together within
    ``ATTACHMENT_MAX_MESSAGE_BYTES``; otherwise nothing changes. Call it in the transaction that writes the
    message, so a refusal can roll the message back with it."""
    if conversation.user_id != user.pk or message.conversation_id != conversation.pk:
        raise ValueError("attachments are bound to a message of the sender's own conversation")
    organization_id = conversation.organization_id
    with transaction.atomic():
        checked = attachments_bindable(
            organization_id=organization_id,
            user=user,
            attachment_ids=attachment_ids,
            max_message_bytes=attachment_limits().max_message_bytes,
            lock=True,
        )
        if isinstance(checked, AttachmentRefused):
            return checked
        if not checked.attachments:
            return AttachmentsBound(())
        bound_at = timezone.now()
        for position, attachment in enumerate(checked.attachments):
            Attachment.objects.for_org(organization_id).filter(pk=attachment.pk).update(
                conversation=conversation, message=message, bound_at=bound_at, position=position
            )
            attachment.conversation = conversation
            attachment.message = message
            attachment.bound_at = bound_at
            attachment.position = position
    return AttachmentsBound(checked.attachments)


def attachment_delete(
    *, attachment: Attachment, actor: User, ip_address: str | None = None
) -> AttachmentDeleted | AttachmentRefused:
    """Delete a pending upload and its file. One already sent belongs to its conversation and is refused
    (``already_bound``): it goes with the conversation."""
    with transaction.atomic():
        locked = (
            Attachment.objects.for_org(attachment.organization_id)
            .select_for_update()
            .select_related("organization")
            .filter(pk=attachment.pk)
            .first()
        )
        if locked is None:
            return AttachmentDeleted(attachment)
        if not locked.pending or locked.conversation_id is not None:
            return AttachmentRefused(AttachmentRefusal.ALREADY_BOUND, {"attachment": str(locked.pk)})
        attachments_delete_rows([locked], actor=actor, reason=DeletionReason.BY_USER, ip_address=ip_address)
    return AttachmentDeleted(locked)


def attachments_delete_for_conversation(*, conversation: Conversation, actor: User | None) -> int:
    """Delete the conversation's attachments (rows now, files once the caller's transaction commits);
    called by :func:`agents.services.conversation_delete`. Answers how many were deleted."""
    rows = list(
        Attachment.objects.for_org(conversation.organization_id)
        .filter(conversation=conversation)
        .select_related("organization")
    )
    attachments_delete_rows(rows, actor=actor, reason=DeletionReason.CONVERSATION_DELETED)
    return len(rows)


def attachments_delete_rows(
    rows: Sequence[Attachment], *, actor: User | None, reason: str, ip_address: str | None = None
) -> None:
    """Delete these attachments (loaded with their organisation), one audit row each, and their files once
    the deletion commits."""
    if not rows:
        return
    with transaction.atomic():
        for attachment in rows:
            audit_log_write(
                organization=attachment.organization,
                actor=actor,
                action="attachment.delete",
                target=attachment,
                before={**attachment_details(attachment), "reason": reason},
                ip_address=ip_address,
            )
        by_org: dict[int, list[uuid.UUID]] = {}
        for attachment in rows:
            by_org.setdefault(attachment.organization_id, []).append(attachment.pk)
        for organization_id, ids in by_org.items():
            Attachment.objects.for_org(organization_id).filter(pk__in=ids).delete()
        names = [attachment.file.name or "" for attachment in rows]
        transaction.on_commit(lambda: _files_delete(names))


def attachment_download_record(*, attachment: Attachment, actor: User, ip_address: str | None = None) -> None:
    """Record in the audit log that ``actor`` downloaded the attachment."""
    audit_log_write(
        organization=Organization.objects.get(pk=attachment.organization_id),
        actor=actor,
        action="attachment.download",
        target=attachment,
        after=attachment_details(attachment),
        ip_address=ip_address,
    )


def attachment_details(attachment: Attachment) -> dict[str, Any]:
    """What the audit log keeps of a file: never its content."""
    return {
        "name": attachment.name,
        "size": attachment.size,
        "content_type": attachment.content_type,
        "sha256": attachment.sha256,
    }


def attachment_name_clean(name: str) -> str:
    """The file's own name: no folders, no control characters, at most 255 characters with its
    extension kept; ``attachment`` when nothing is left."""
    base = (name or "").replace("\\", "/").rsplit("/", 1)[-1]
    base = "".join(ch for ch in base if unicodedata.category(ch)[0] != "C").strip()
    if base in ("", ".", ".."):
        return "attachment"
    if len(base) <= NAME_MAX_LENGTH:
        return base
    stem, dot, extension = base.rpartition(".")
    if dot and len(extension) < 16:
        return stem[: NAME_MAX_LENGTH - len(extension) - 1] + dot + extension
    return base[:NAME_MAX_LENGTH]


def _sha256(content: File) -> str:
    digest = hashlib.sha256()
    content.seek(0)
    for block in content.chunks():
        digest.update(block)
    content.seek(0)
    return digest.hexdigest()


def _files_delete(names: Iterable[str]) -> None:
    """Delete stored files whose rows are gone (see :func:`platform_core.stored_files.stored_files_delete`)."""
    storage: Storage = Attachment._meta.get_field("file").storage  # type: ignore[attr-defined]  # FileField has it
    stored_files_delete(storage, names, kind="attachment", log=logger)
