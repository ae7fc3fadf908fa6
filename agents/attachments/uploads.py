"""The upload handler of the attachments' upload route: it watches the multipart body as Django reads it.

- A file that passes the per-file limit is dropped as soon as it does (Django reads the rest of it without
  keeping it), and remembered, so the route answers it with ``too_large``.
- A body that ends before its last file does (an upload cut off midway: the client disconnected, or sent
  a truncated body) is remembered as *interrupted*: Django's parser silently drops that last file, and the
  route refuses the whole request so that nothing of a half-sent upload is stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.files.uploadhandler import FileUploadHandler, SkipFile


@dataclass(frozen=True, slots=True)
class SkippedFile:
    field_name: str
    file_name: str


class AttachmentUploadGuard(FileUploadHandler):
    """First of the request's upload handlers; passes every chunk on to Django's own (memory, then a
    temporary file) unless its file is over ``max_file_bytes``."""

    def __init__(self, request: Any = None, *, max_file_bytes: int) -> None:
        super().__init__(request)
        self.max_file_bytes = max_file_bytes
        self.skipped: list[SkippedFile] = []
        self.interrupted = False

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        if start + len(raw_data) > self.max_file_bytes:
            self.skipped.append(SkippedFile(str(self.field_name or ""), str(self.file_name or "")))
            raise SkipFile()
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None  # the next handler makes the file

    def upload_interrupted(self) -> None:
        self.interrupted = True
