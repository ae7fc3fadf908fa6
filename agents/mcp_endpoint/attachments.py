"""The files of an MCP tool call: its ``attachments`` argument, as the MCP specification shapes content.

Each item is one of the specification's content blocks (MCP 2025-11-25, ``schema/2025-11-25/schema.ts``):

- an ``EmbeddedResource``, ``{"type": "resource", "resource": {"uri", "mimeType"?, "text"}}`` (a
  ``TextResourceContents``) or ``{..., "blob": "<base64>"}`` (a ``BlobResourceContents``): a file sent in the
  call, stored as the caller's upload (:mod:`agents.attachments.inline`) under the last segment of its
  ``uri``'s path, else a name made from its ``mimeType``; a text resource as its UTF-8 bytes;
- a ``ResourceLink``, ``{"type": "resource_link", "uri": "attachment:<id>", "name"}``: one of the caller's
  pending uploads (``POST /api/v1/orgs/<slug>/attachments/``), by its id.

:func:`call_files_parse` reads and decodes the argument (nothing stored); :func:`call_files_store` stores
its embedded files, all or none, and gives every item's attachment id in the argument's order;
:func:`call_files_discard` deletes them again when the question is refused.
"""

from __future__ import annotations

import math
import mimetypes
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from django.contrib.auth.models import User
from django.utils.translation import gettext as _

from agents.attachments.inline import (
    InlineFile,
    InlineRefused,
    base64_decoded,
    file_name_for,
    inline_files_discard,
    inline_files_store,
)
from agents.attachments.limits import attachment_limits
from agents.attachments.sniffing import FailureCode
from agents.conversations.attachments import MAX_ATTACHMENTS
from platform_core.models import Organization

__all__ = [
    "ATTACHMENT_URI_SCHEME",
    "CallFiles",
    "CallFilesRefused",
    "CallFilesStored",
    "Uploaded",
    "attachments_input_schema",
    "call_files_discard",
    "call_files_parse",
    "call_files_store",
    "request_body_limit",
]

#: The scheme of a resource link to one of the caller's uploads: ``attachment:<id>``.
ATTACHMENT_URI_SCHEME = "attachment"

#: Room in a request's body for what surrounds its files (the JSON-RPC envelope, the question).
BODY_ROOM_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Uploaded:
    """A resource link to one of the caller's pending uploads."""

    attachment_id: str
    where: str


@dataclass(frozen=True, slots=True)
class CallFiles:
    """The call's files in the argument's order: sent in it (:class:`InlineFile`) or uploaded before."""

    items: tuple[InlineFile | Uploaded, ...] = ()

    @property
    def inline(self) -> tuple[InlineFile, ...]:
        return tuple(item for item in self.items if isinstance(item, InlineFile))


@dataclass(frozen=True, slots=True)
class CallFilesStored:
    """Every item's attachment id, in order; ``stored``: those stored for this call (to discard on refusal)."""

    attachment_ids: tuple[uuid.UUID | str, ...]
    stored: tuple[uuid.UUID, ...]


@dataclass(frozen=True, slots=True)
class CallFilesRefused:
    """The argument, or one of its files, was refused (nothing of it is stored)."""

    code: str
    message: str


def call_files_parse(value: object) -> CallFiles | CallFilesRefused:
    """The files of an ``attachments`` argument (``None``: none), decoded, or why it is refused; the
    message names the item at fault (``attachments[2]``)."""
    if value is None:
        return CallFiles()
    if not isinstance(value, list):
        return CallFilesRefused(
            "bad_attachments",
            _("attachments must be a list of embedded resources or resource links."),
        )
    if len(value) > MAX_ATTACHMENTS:
        return CallFilesRefused(
            "too_many_attachments",
            _("A message carries at most %(limit)d files; this one has %(count)d.")
            % {"limit": MAX_ATTACHMENTS, "count": len(value)},
        )
    items: list[InlineFile | Uploaded] = []
    for index, item in enumerate(value):
        parsed = _item_parse(item, where=f"attachments[{index}]", number=index + 1)
        if isinstance(parsed, CallFilesRefused):
            return parsed
        items.append(parsed)
    return CallFiles(tuple(items))


def _item_parse(item: object, *, where: str, number: int) -> InlineFile | Uploaded | CallFilesRefused:
    kind = item.get("type") if isinstance(item, dict) else None
    if isinstance(item, dict) and kind == "resource_link":
        return _link_parse(item, where=where)
    if isinstance(item, dict) and kind == "resource" and isinstance(item.get("resource"), dict):
        return _resource_parse(item["resource"], where=where, number=number)
    return _refused(
        where,
        "bad_attachments",
        _(
            'an attachment is an embedded resource {"type": "resource", "resource": {...}} or a '
            'resource link {"type": "resource_link", "uri": "attachment:<id>"}.'
        ),
    )


def _resource_parse(resource: dict[str, Any], *, where: str, number: int) -> InlineFile | CallFilesRefused:
    """A ``TextResourceContents`` or ``BlobResourceContents`` as the file it carries."""
    uri, media_type = resource.get("uri"), resource.get("mimeType")
    text, blob = resource.get("text"), resource.get("blob")
    if (
        not isinstance(uri, str)
        or (media_type is not None and not isinstance(media_type, str))
        or (text is None) == (blob is None)
        or not isinstance(text if blob is None else blob, str)
    ):
        return _refused(
            where,
            "bad_attachments",
            _('a resource has a "uri" and either a "text" or a base64 "blob", each a string.'),
        )
    if isinstance(text, str):
        data: bytes | None = text.encode("utf-8", "replace")
        declared = media_type or "text/plain"
    else:
        data = base64_decoded(str(blob))
        if data is None:
            return _refused(where, "bad_file_data", _("the resource's blob is not valid base64."))
        declared = media_type or "application/octet-stream"
    if not data:
        return _refused(where, FailureCode.EMPTY.value, _("the file is empty."))
    return InlineFile(name=_file_name(uri, declared, number), data=data, where=where)


def _link_parse(item: dict[str, Any], *, where: str) -> Uploaded | CallFilesRefused:
    uri = item.get("uri")
    scheme, _colon, rest = uri.partition(":") if isinstance(uri, str) else ("", "", "")
    if scheme.lower() != ATTACHMENT_URI_SCHEME or not rest:
        return _refused(
            where,
            "bad_attachments",
            _("a resource link names one of your uploads by its id: attachment:<id>."),
        )
    return Uploaded(attachment_id=rest.strip(), where=where)


def _file_name(uri: str, media_type: str, number: int) -> str:
    """The last segment of ``uri``'s path, given the declared type's extension when it has none; else a
    name made from the type (``file-2.png``)."""
    try:
        path = urlsplit(uri).path
    except ValueError:  # not a URI one can split (an unclosed IPv6 host): no name in it
        path = ""
    name = unquote(path.rstrip("/").rsplit("/", 1)[-1]).strip()
    if not name:
        return file_name_for(media_type, number)
    if "." not in name.strip("."):
        extension = mimetypes.guess_extension(media_type.split(";")[0].strip(), strict=False)
        return f"{name}{extension}" if extension else name
    return name


def _refused(where: str, code: str, message: str) -> CallFilesRefused:
    return CallFilesRefused(code, _("%(where)s: %(message)s") % {"where": where, "message": message})


def call_files_store(
    *, organization: Organization, user: User, files: CallFiles
) -> CallFilesStored | CallFilesRefused:
    """Store the call's embedded files as ``user``'s pending uploads, all or none (call it outside a
    transaction), and give every item's attachment id in order."""
    inline = files.inline
    stored: tuple[uuid.UUID, ...] = ()
    if inline:
        outcome = inline_files_store(organization=organization, user=user, files=inline)
        if isinstance(outcome, InlineRefused):
            named = next((file.name for file in inline if file.where == outcome.where), "")
            where = f"{outcome.where} ({named})" if named else outcome.where
            return _refused(where, outcome.code, outcome.message)
        stored = outcome.attachment_ids
    stored_ids = iter(stored)
    ids = tuple(
        next(stored_ids) if isinstance(item, InlineFile) else item.attachment_id for item in files.items
    )
    return CallFilesStored(attachment_ids=ids, stored=stored)


def call_files_discard(*, organization_id: int, user: User, stored: Sequence[uuid.UUID]) -> None:
    """Delete the files stored for a call whose question was then refused."""
    if stored:
        inline_files_discard(organization_id=organization_id, user=user, attachment_ids=stored)


def request_body_limit() -> int:
    """The largest request body the endpoint reads: one message's files (the larger of the per-message and
    the per-file limit) base64-encoded, 4 characters for every 3 bytes, and room for the rest."""
    limits = attachment_limits()
    files = max(limits.max_message_bytes, limits.max_file_bytes)
    return 4 * math.ceil(files / 3) + BODY_ROOM_BYTES


def attachments_input_schema() -> dict[str, Any]:
    """The ``attachments`` argument of an agent tool: the specification's ``EmbeddedResource`` (with its
    ``TextResourceContents`` or ``BlobResourceContents``) and ``ResourceLink`` shapes (MCP 2025-11-25)."""
    meta = {"type": "object"}
    contents = {
        "uri": {"type": "string", "format": "uri"},
        "mimeType": {"type": "string"},
        "_meta": meta,
    }
    text = {
        "type": "object",
        "properties": {**contents, "text": {"type": "string"}},
        "required": ["uri", "text"],
    }
    blob = {
        "type": "object",
        "properties": {**contents, "blob": {"type": "string", "format": "byte"}},
        "required": ["uri", "blob"],
    }
    embedded = {
        "type": "object",
        "description": _("A file sent with the question: a text resource, or a blob in base64."),
        "properties": {
            "type": {"type": "string", "const": "resource"},
            "resource": {"anyOf": [text, blob]},
            "annotations": {"type": "object"},
            "_meta": meta,
        },
        "required": ["type", "resource"],
    }
    link = {
        "type": "object",
        "description": _("One of your uploads (POST /api/v1/orgs/<slug>/attachments/), by its id."),
        "properties": {
            "type": {"type": "string", "const": "resource_link"},
            "uri": {"type": "string", "pattern": f"^{ATTACHMENT_URI_SCHEME}:", "format": "uri"},
            "name": {"type": "string"},
            "mimeType": {"type": "string"},
            "_meta": meta,
        },
        "required": ["type", "uri", "name"],
    }
    return {
        "type": "array",
        "maxItems": MAX_ATTACHMENTS,
        "description": _(
            "Optional: files for the agent to read with the question (documents; images when its model "
            "reads images): MCP embedded resources, or resource links to your uploads (attachment:<id>)."
        ),
        "items": {"anyOf": [embedded, link]},
    }
