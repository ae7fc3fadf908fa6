"""What a run reads of the files attached to its conversation's messages.

A document is read once, at upload (:func:`document_read`, stored on its row): its text, by the knowledge
bases' parser (a spreadsheet keeps its sheets, each a table under its header row), only as far as
:data:`INLINE_CHARACTERS`: a longer one is cut at a line there, and the model is told what it does not
see. So a run never parses a file: each message's attachments become content parts after its text
(:func:`message_parts`), a document's stored text headed by its name and type, an image a reference
(:func:`agents.engine.attachments.image_reference`) that the run's model reads through
:func:`conversation_reader` when a request goes out (the file read off the process's shared database
thread), so no image's bytes are ever kept in the run's transcript or checkpoints.

What each attachment came to (:class:`AttachmentRead`) is what the run's events record.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, Literal

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async

from agents.attachments.models import Attachment, AttachmentKind, TextShown
from agents.engine.attachments import AttachmentData, AttachmentReader, image_reference
from agents.knowledge.formats import DocumentFormat
from agents.knowledge.parsing import ParseFailed, ParseLimits, document_parsed

__all__ = [
    "INLINE_CHARACTERS",
    "AttachmentRead",
    "DocumentText",
    "MessageParts",
    "conversation_reader",
    "document_read",
    "message_parts",
]

logger = logging.getLogger(__name__)

INLINE_CHARACTERS = 60_000
"""The most of one document's text a message carries (about 15,000 tokens)."""

Shown = Literal["full", "cut", "image", "unreadable"]
_SHOWN: dict[TextShown, Shown] = {
    TextShown.FULL: "full",
    TextShown.CUT: "cut",
    TextShown.UNREADABLE: "unreadable",
}


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


def message_parts(attachments: Sequence[Attachment], *, search_tool: str | None = None) -> MessageParts:
    """The content parts of a message's ``attachments`` (their stored text; an upload older than that
    is read here). ``search_tool``: the run's tool that searches the conversation's long documents, named
    after each one's beginning."""
    parts: list[dict[str, Any]] = []
    read: list[AttachmentRead] = []
    for attachment in attachments:
        if attachment.kind == AttachmentKind.IMAGE:
            parts.append(image_reference(str(attachment.pk), attachment.name))
            shown: Shown = "image"
        else:
            document = (
                DocumentText(attachment.text, TextShown(attachment.text_shown))
                if attachment.text_shown
                else _stored_document_read(attachment)
            )
            head = f"[Attached file: {attachment.name} ({attachment.content_type})]"
            text = f"{head}\n{document.text}"
            if search_tool and document.shown == TextShown.CUT:
                text += f"\n[Search the whole file with the tool {search_tool}.]"
            parts.append({"type": "text", "text": text})
            shown = _SHOWN[document.shown]
        read.append(AttachmentRead(attachment.pk, attachment.name, attachment.kind, shown))
    return MessageParts(tuple(parts), tuple(read))


@dataclass(frozen=True, slots=True)
class DocumentText:
    """What a run reads of a document: its text (its beginning, with a note, when cut), or a note saying
    why there is none."""

    text: str
    shown: TextShown


def document_read(fmt: DocumentFormat, file: BinaryIO) -> DocumentText:
    """The text of a checked document, read only as far as :data:`INLINE_CHARACTERS` (a file the parser
    refuses reads as a note saying so)."""
    parsed = document_parsed(fmt, file, ParseLimits(max_characters=INLINE_CHARACTERS))
    if isinstance(parsed, ParseFailed):
        return DocumentText(f"[The file has no text that can be read ({parsed.code}).]", TextShown.UNREADABLE)
    text = "\n\n".join(page for page in parsed.pages if page)
    if parsed.complete and len(text) <= INLINE_CHARACTERS:
        return DocumentText(text, TextShown.FULL)
    cut = text.rfind("\n", 0, INLINE_CHARACTERS)
    shown = text[: cut if cut > INLINE_CHARACTERS // 2 else INLINE_CHARACTERS]
    rest = f"{len(text) - len(shown):,} more are not" if parsed.complete else "the rest is not"
    note = (
        f"[The file is longer: its first {len(shown):,} characters are shown, {rest}. Say so when the "
        "answer may depend on the rest.]"
    )
    return DocumentText(f"{shown}\n{note}", TextShown.CUT)


def _stored_document_read(attachment: Attachment) -> DocumentText:
    try:
        with attachment.file.open("rb") as file:
            return document_read(DocumentFormat(attachment.format), file)
    except (OSError, ValueError) as exc:  # the storage lost it, or a format this platform no longer reads
        logger.warning("attachment %s could not be read: %s", attachment.pk, type(exc).__name__)
        return DocumentText("[The file could not be read.]", TextShown.UNREADABLE)


def conversation_reader(*, organization_id: int, conversation_id: uuid.UUID) -> AttachmentReader:
    """Reads the images attached to one conversation (of one organisation), for its runs' model; an
    attachment of any other conversation, or deleted, reads as ``None``."""

    @database_sync_to_async
    def found(key: uuid.UUID) -> Attachment | None:
        return (
            Attachment.objects.for_org(organization_id)
            .filter(pk=key, conversation_id=conversation_id, kind=AttachmentKind.IMAGE)
            .first()
        )

    # The file system or object storage is read on a thread of its own, not on the one that serves the
    # process's database work (its other runs and websocket consumers would wait for the bytes).
    @sync_to_async(thread_sensitive=False)
    def data_of(attachment: Attachment) -> AttachmentData | None:
        try:
            with attachment.file.open("rb") as file:
                data = file.read()
        except OSError:
            return None
        return AttachmentData(name=attachment.name, media_type=attachment.content_type, data=data)

    async def reader(attachment_id: str) -> AttachmentData | None:
        try:
            key = uuid.UUID(attachment_id)
        except ValueError:
            return None
        attachment = await found(key)
        return None if attachment is None else await data_of(attachment)

    return reader
