"""A document's stored file as an HTTP download, for the REST API and the chat's citation links.

Who may download is decided before this (:func:`agents.knowledge.selectors.document_readable`); this
only answers with the file: always as an attachment under its original name, never rendered by the
browser (``nosniff``), and kept out of shared caches.
"""

from __future__ import annotations

from django.http import FileResponse

from agents.knowledge.models import Document
from platform_core.stored_files import Opened, StoredFileMissing, StoredFileUnreachable, stored_file_opened


def document_file_response(document: Document) -> FileResponse | StoredFileMissing | StoredFileUnreachable:
    """The document's file, streamed from Django's storage; missing when there is none (a URL's document
    never fetched) or the storage no longer has it, unreachable when the storage does not answer."""
    opened = stored_file_opened(document.file)
    if not isinstance(opened, Opened):
        return opened
    response = FileResponse(opened.file, as_attachment=True, filename=document.name)
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "private, no-store"
    return response
