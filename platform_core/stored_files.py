"""Opening a stored file (an uploaded document or attachment) for a download, told apart from a file the
storage no longer has and a storage that does not answer (object storage down, refusing the platform's
credentials): the first is a 404, the second a 503 saying to try again, never a 500 or a response cut off
after its headers."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from django.core.files import File
from django.core.files.storage import Storage
from django.db.models.fields.files import FieldFile
from django.utils.translation import gettext as _

__all__ = [
    "Opened",
    "StoredFileMissing",
    "StoredFileUnreachable",
    "storage_unavailable_message",
    "stored_file_opened",
    "stored_files_delete",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Opened:
    file: File


@dataclass(frozen=True, slots=True)
class StoredFileMissing:
    """The storage has no such file (removed behind the platform's back)."""


@dataclass(frozen=True, slots=True)
class StoredFileUnreachable:
    """The storage did not give the file: ``error`` names its error's type (for the log, never a user)."""

    error: str


def stored_file_opened(field: FieldFile) -> Opened | StoredFileMissing | StoredFileUnreachable:
    """``field``'s file, open for reading with its first bytes fetched (object storage downloads a file on
    its first read: a failing storage is found here, before any response starts)."""
    if not field:
        return StoredFileMissing()
    try:
        file = field.open("rb")
        file.seek(0)
    except FileNotFoundError:
        return StoredFileMissing()
    except Exception as exc:  # any storage backend's own errors (botocore's, a full disk's OSError)
        if _not_found(exc):
            return StoredFileMissing()
        logger.warning("stored file %s could not be read: %s", field.name, type(exc).__name__)
        return StoredFileUnreachable(type(exc).__name__)
    return Opened(file)


def _not_found(exc: Exception) -> bool:
    """An object storage's 404 (django-storages turns it into FileNotFoundError when opening; a later
    read may still raise it as the client's own error)."""
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return False
    status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
    code = (response.get("Error") or {}).get("Code")
    return status == 404 or code in ("NoSuchKey", "404")


def storage_unavailable_message() -> str:
    """What a user reads when the file storage did not give a file."""
    return _("The file storage did not answer. Try again in a moment; if it lasts, tell your administrator.")


def stored_files_delete(storage: Storage, names: Iterable[str], *, kind: str, log: logging.Logger) -> None:
    """Delete stored files whose rows are gone (or never were). A storage that fails (object storage out of
    reach, credentials refused) leaves the file behind, logged on ``log`` for the operator by its stored name
    (``kind``: what the file was, "attachment" or "knowledge"); the deletion has happened and is neither
    undone nor answered with an error."""
    for name in names:
        if not name:
            continue
        try:
            storage.delete(name)
        except Exception:
            log.exception("could not delete the stored %s file %s; it is left behind", kind, name)
