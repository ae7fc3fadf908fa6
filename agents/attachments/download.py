"""An attachment's stored file as an HTTP download, for the REST API and the chat's web route.

Who may download is decided before this (:func:`agents.attachments.selectors.attachment_visible_to`);
this only answers with the file: as an attachment under its own name and with the content type its bytes
were found to be (never the one a client claimed), never rendered by the browser (``nosniff``), kept out of
shared caches.
"""

from __future__ import annotations

from django.http import FileResponse

from agents.attachments.models import Attachment
from platform_core.stored_files import Opened, StoredFileMissing, StoredFileUnreachable, stored_file_opened


def attachment_file_response(
    attachment: Attachment,
) -> FileResponse | StoredFileMissing | StoredFileUnreachable:
    """The attachment's file, streamed from Django's storage; missing when the storage no longer has it,
    unreachable when the storage does not answer."""
    opened = stored_file_opened(attachment.file)
    if not isinstance(opened, Opened):
        return opened
    response = FileResponse(
        opened.file, as_attachment=True, filename=attachment.name, content_type=attachment.content_type
    )
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "private, no-store"
    return response
