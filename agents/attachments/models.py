"""A file attached to a chat: stored on Django's storage (the file system, or S3-compatible object storage),
never in the database, which keeps what the file is and whose it is.

An upload is *pending* (no conversation) until it is sent with a message: then it is *bound* to that
message and its conversation, and from then on belongs to the conversation (its owner sees it; it is
deleted with it). A pending upload never sent is deleted after ``ATTACHMENT_PENDING_HOURS``.

The conversation and message keys are emptied, not cascaded, when their rows go by a cascade (an
operator deleting a user or a conversation in the admin): the attachment is then an *orphan*
(``bound_at`` set, no conversation), seen by nobody, and the retention sweep deletes it with its file,
which a cascade could not have done. Deleting a conversation through the platform deletes its attachments
and their files at once (:func:`agents.attachments.services.attachments_delete_for_conversation`).
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from platform_core.model_fields import optional_foreign_key
from platform_core.models import OrgOwnedModel


def attachment_upload_to(attachment: Attachment, filename: str) -> str:
    """``attachments/<org>/<attachment>/<file name>``: a folder per attachment, so names never meet."""
    return f"attachments/{attachment.organization_id}/{attachment.pk}/{filename}"


class AttachmentKind(models.TextChoices):
    DOCUMENT = "document", _("Document")
    IMAGE = "image", _("Image")


class TextShown(models.TextChoices):
    """How much of a document's text its runs read; empty: not read yet (an image, an older upload)."""

    FULL = "full", _("whole")
    CUT = "cut", _("its beginning")
    UNREADABLE = "unreadable", _("no text")


class Attachment(OrgOwnedModel):
    """One file a user attached to a chat message (or uploaded to attach), and what its bytes are."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    uploaded_by = optional_foreign_key(settings.AUTH_USER_MODEL, _("uploaded by"))
    conversation = optional_foreign_key("agents.Conversation", _("conversation"), related_name="attachments")
    message = optional_foreign_key("agents.Message", _("message"), related_name="attachments")
    bound_at = models.DateTimeField(_("sent at"), null=True, blank=True)
    # Its place among the files of its message, as the sender listed them (uploads end in any order).
    position = models.PositiveSmallIntegerField(_("position"), default=0, editable=False)
    name = models.CharField(_("name"), max_length=255)
    kind = models.CharField(_("kind"), max_length=16, choices=AttachmentKind.choices)
    format = models.CharField(_("format"), max_length=16)
    content_type = models.CharField(_("content type"), max_length=100)
    size = models.PositiveBigIntegerField(_("size (bytes)"))
    sha256 = models.CharField(_("content hash"), max_length=64)
    file = models.FileField(_("file"), upload_to=attachment_upload_to, max_length=500)
    # A document's text as its runs read it, read once at upload (agents.attachments.reading): its
    # beginning when it is long, or why it has none; empty for an image.
    text = models.TextField(_("text read"), blank=True, default="", editable=False)
    text_shown = models.CharField(
        _("reading"), max_length=16, blank=True, default="", choices=TextShown.choices, editable=False
    )
    created_at = models.DateTimeField(_("uploaded at"), auto_now_add=True)

    class Meta:
        verbose_name = _("attachment")
        verbose_name_plural = _("attachments")
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["organization", "uploaded_by", "-created_at"], name="attachment_uploader"),
            models.Index(fields=["created_at"], name="attachment_created"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def pending(self) -> bool:
        """Uploaded, not sent with a message yet."""
        return self.bound_at is None
