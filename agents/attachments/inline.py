"""Files that arrive inside a request (a data URL in an OpenAI-compatible message, an embedded resource of
an MCP tool call) rather than uploaded first: each is stored as the sender's pending upload, checked from
its bytes as any upload is, so the message can be sent with them; a refused message discards them again.
"""

from __future__ import annotations

import base64
import binascii
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.core.files.base import ContentFile
from django.utils.translation import gettext as _

from agents.attachments.models import Attachment
from agents.attachments.refusals import AttachmentRefused
from agents.attachments.services import AttachmentStored, attachment_delete, attachment_upload
from platform_core.models import Organization

__all__ = [
    "InlineFile",
    "InlineRefused",
    "InlineStored",
    "base64_decoded",
    "data_url_decoded",
    "file_name_for",
    "inline_files_discard",
    "inline_files_store",
]

_DATA_URL = re.compile(r"data:(?P<type>[\w.+-]+/[\w.+-]+)?(?:;[\w-]+=[^;,]*)*;base64,(?P<data>.*)", re.DOTALL)
_EXTENSIONS = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/gif": "gif",
    "image/webp": "webp",
    "application/pdf": "pdf",
    "text/csv": "csv",
    "text/plain": "txt",
    "text/markdown": "md",
}


@dataclass(frozen=True, slots=True)
class InlineFile:
    """A file sent inside a request: its name (made up when the client gave none) and bytes; ``where``
    names the part of the request it came in (for the error)."""

    name: str
    data: bytes
    where: str


@dataclass(frozen=True, slots=True)
class InlineStored:
    attachment_ids: tuple[uuid.UUID, ...]


@dataclass(frozen=True, slots=True)
class InlineRefused:
    """``where``'s file was refused (nothing of the request's files is kept)."""

    where: str
    code: str
    message: str


def data_url_decoded(url: str) -> tuple[str, bytes] | None:
    """The media type and bytes of a base64 ``data:`` URL, or ``None`` when it is not one."""
    match = _DATA_URL.fullmatch(url.strip())
    if match is None:
        return None
    data = base64_decoded(match.group("data"))
    return None if data is None else (match.group("type") or "application/octet-stream", data)


def base64_decoded(text: str) -> bytes | None:
    """``text`` decoded from base64 (strictly: no stray characters), or ``None``."""
    try:
        return base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        return None


def file_name_for(media_type: str, number: int, stem: str = "file") -> str:
    """A name for an unnamed file: ``<stem>-<number>.<extension of its declared type>`` (the type the
    bytes turn out to be is decided at storing, whatever the name says)."""
    return f"{stem}-{number}.{_EXTENSIONS.get(media_type, 'bin')}"


def inline_files_store(
    *, organization: Organization, user: User, files: Sequence[InlineFile]
) -> InlineStored | InlineRefused:
    """Store ``files`` as ``user``'s pending uploads, all or none (call it outside a transaction)."""
    stored: list[Attachment] = []
    for file in files:
        if not file.data:
            inline_files_discard(
                organization_id=organization.pk, user=user, attachment_ids=[a.pk for a in stored]
            )
            return InlineRefused(file.where, "bad_file_data", _("The file's data is not valid base64."))
        outcome = attachment_upload(
            organization=organization,
            user=user,
            name=file.name,
            content=ContentFile(file.data, name=file.name),
        )
        if isinstance(outcome, AttachmentRefused):
            inline_files_discard(
                organization_id=organization.pk, user=user, attachment_ids=[a.pk for a in stored]
            )
            return InlineRefused(file.where, outcome.code, outcome.message)
        assert isinstance(outcome, AttachmentStored)
        stored.append(outcome.attachment)
    return InlineStored(tuple(a.pk for a in stored))


def inline_files_discard(*, organization_id: int, user: User, attachment_ids: Sequence[uuid.UUID]) -> None:
    """Delete the request's files again (its message was refused); any already sent stays."""
    rows = Attachment.objects.for_org(organization_id).filter(pk__in=list(attachment_ids), uploaded_by=user)
    for attachment in rows:
        attachment_delete(attachment=attachment, actor=user)
