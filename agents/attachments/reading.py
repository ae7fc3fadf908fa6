"""What a run reads of the files attached to its conversation's messages.

Each message's attachments become content parts after its text (:func:`message_parts`): a document's
text, read by the knowledge bases' parser (a spreadsheet keeps its sheets, each a table under its header
row), headed by its name and type; an image as a reference (:func:`agents.engine.attachments.image_reference`)
that the run's model reads through :func:`conversation_reader` when a request goes out, so no image's bytes
are ever kept in the run's transcript or checkpoints. A document longer than
:data:`INLINE_CHARACTERS` is cut at a line there, and the model is told what it does not see.

What each attachment came to (:class:`AttachmentRead`) is what the run's events record.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from channels.db import database_sync_to_async

from agents.attachments.models import Attachment, AttachmentKind
from agents.engine.attachments import AttachmentData, AttachmentReader, image_reference
from agents.knowledge.formats import DocumentFormat
from agents.knowledge.parsing import ParseFailed, document_parsed

__all__ = [
    "INLINE_CHARACTERS",
    "AttachmentRead",
    "MessageParts",
    "conversation_reader",
    "message_parts",
]

logger = logging.getLogger(__name__)

INLINE_CHARACTERS = 60_000
"""The most of one document's text a message carries (about 15,000 tokens)."""

Shown = Literal["full", "cut", "image", "unreadable"]


@dataclass(frozen=True, slots=True)
class AttachmentRead:
    """How one attachment reached the model: whole, cut, as an image, or not at all (no text in it)."""

    attachment_id: uuid.UUID
    name: str
    kind: str
    shown: Shown

    def as_data(self) -> dict[str, str]:
        return {"id": str(self.attachment_id), "name": self.name, "kind": self.kind, "shown": self.shown}


@dataclass(frozen=True, slots=True)
class MessageParts:
    """A message's attachments as content parts, and how each was read."""

    parts: tuple[dict[str, Any], ...]
    read: tuple[AttachmentRead, ...]

    @property
    def has_images(self) -> bool:
        return any(item.shown == "image" for item in self.read)


def message_parts(attachments: Sequence[Attachment]) -> MessageParts:
    """The content parts of a message's ``attachments`` (sync: reads the stored files)."""
    parts: list[dict[str, Any]] = []
    read: list[AttachmentRead] = []
    for attachment in attachments:
        if attachment.kind == AttachmentKind.IMAGE:
            parts.append(image_reference(str(attachment.pk), attachment.name))
            shown: Shown = "image"
        else:
            text, shown = _document_text(attachment)
            parts.append({"type": "text", "text": text})
        read.append(AttachmentRead(attachment.pk, attachment.name, attachment.kind, shown))
    return MessageParts(tuple(parts), tuple(read))


def _document_text(attachment: Attachment) -> tuple[str, Shown]:
    head = f"[Attached file: {attachment.name} ({attachment.content_type})]"
    try:
        with attachment.file.open("rb") as file:
            parsed = document_parsed(DocumentFormat(attachment.format), file)
    except (OSError, ValueError) as exc:  # the storage lost it, or a format this platform no longer reads
        logger.warning("attachment %s could not be read: %s", attachment.pk, type(exc).__name__)
        return f"{head}\n[The file could not be read.]", "unreadable"
    if isinstance(parsed, ParseFailed):
        return f"{head}\n[The file has no text that can be read ({parsed.code}).]", "unreadable"
    pages = [page for page in parsed.pages if page]
    text = "\n\n".join(pages)
    if len(text) <= INLINE_CHARACTERS:
        return f"{head}\n{text}", "full"
    cut = text.rfind("\n", 0, INLINE_CHARACTERS)
    shown = text[: cut if cut > INLINE_CHARACTERS // 2 else INLINE_CHARACTERS]
    left = len(text) - len(shown)
    note = (
        f"[The file is longer: its first {len(shown):,} characters are shown, {left:,} more are not. Say so "
        "when the answer may depend on the rest.]"
    )
    return f"{head}\n{shown}\n{note}", "cut"


def conversation_reader(*, organization_id: int, conversation_id: uuid.UUID) -> AttachmentReader:
    """Reads the images attached to one conversation (of one organisation), for its runs' model; an
    attachment of any other conversation, or deleted, reads as ``None``."""

    @database_sync_to_async
    def read(attachment_id: str) -> AttachmentData | None:
        try:
            key = uuid.UUID(attachment_id)
        except ValueError:
            return None
        attachment = (
            Attachment.objects.for_org(organization_id)
            .filter(pk=key, conversation_id=conversation_id, kind=AttachmentKind.IMAGE)
            .first()
        )
        if attachment is None:
            return None
        try:
            with attachment.file.open("rb") as file:
                data = file.read()
        except OSError:
            return None
        return AttachmentData(name=attachment.name, media_type=attachment.content_type, data=data)

    async def reader(attachment_id: str) -> AttachmentData | None:
        return await read(attachment_id)

    return reader
