"""Why a document could not be indexed, in words an admin can act on, in the admin's language.

A failed document stores a code (a :class:`~agents.knowledge.formats.RefusalCode`, a
:class:`~agents.knowledge.parsing.FailureCode` or one of :class:`IngestFailure`) and its figures; the
message is made when it is shown, so each reader sees it in their own language.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from django.template.defaultfilters import filesizeformat
from django.utils.translation import gettext as _

from agents.knowledge.fetching import FetchFailure
from agents.knowledge.formats import RefusalCode
from agents.knowledge.parsing import FailureCode


class IngestFailure(StrEnum):
    """Failures of the pipeline itself rather than of the file."""

    FILE_MISSING = "file_missing"  # the stored file is gone (deleted from the storage behind our back)
    INTERRUPTED = "interrupted"  # workers stopped while indexing it, again and again
    NO_PASSAGES = "no_passages"  # the text made no passage (only headings, say)
    INTERNAL = "internal"  # an error of ours: the logs have it
    BUDGET_REACHED = "budget_reached"  # a budget of the organisation is spent: nothing was embedded
    EMBEDDING_UNREACHABLE = "embedding_unreachable"
    EMBEDDING_REFUSED = "embedding_refused"
    EMBEDDING_RATE_LIMITED = "embedding_rate_limited"
    EMBEDDING_BAD_ANSWER = "embedding_bad_answer"


def failure_message(code: str, figures: Mapping[str, object] | None = None) -> str:
    """The admin's explanation of the failure ``code`` (in the active language)."""
    figures = dict(figures or {})

    def size(key: str) -> str:
        value = figures.get(key, 0)
        return filesizeformat(value if isinstance(value, int) else 0)

    messages: dict[str, str] = {
        RefusalCode.TOO_LARGE: _("The file is %(size)s; the limit is %(limit)s. Split it or raise the limit.")
        % {"size": size("size"), "limit": size("limit")},
        RefusalCode.UNKNOWN_FORMAT: _(
            "Files ending in “%(extension)s” cannot be read. Upload PDF, DOCX, XLSX, CSV, PPTX, Markdown, "
            "HTML or plain text."
        )
        % {"extension": figures.get("extension") or _("(no extension)")},
        RefusalCode.EXTENSION_MISMATCH: _(
            "The file's content is not what its name says (%(named)s). Save it again in that format, or "
            "rename it to the right extension."
        )
        % {"named": figures.get("named", "")},
        RefusalCode.UNREADABLE_PACKAGE: _(
            "The file is damaged: its package cannot be opened. Save it again."
        ),
        RefusalCode.UNPACKS_TOO_LARGE: _(
            "The file unpacks to more than %(limit)s, beyond any real document; it was not opened."
        )
        % {"limit": size("limit")},
        RefusalCode.COMPRESSION_TOO_HIGH: _(
            "The file is compressed far beyond any real document (a “zip bomb”); it was not opened."
        ),
        RefusalCode.TOO_MANY_MEMBERS: _("The file's package holds too many parts (more than %(limit)s).")
        % {"limit": figures.get("limit", "")},
        RefusalCode.ENCRYPTED: _(
            "The file is protected by a password. Remove the password and upload it again."
        ),
        RefusalCode.NOT_TEXT: _(
            "The file is not text in UTF-8 or GB18030. Save it as UTF-8 and upload it again."
        ),
        FailureCode.ENCRYPTED: _(
            "The file is protected by a password. Remove the password and upload it again."
        ),
        FailureCode.MALFORMED: _("The file is damaged and cannot be read (%(error)s). Save it again.")
        % {"error": figures.get("error", "")},
        FailureCode.TOO_MANY_PAGES: _(
            "The document has more than %(limit)s pages, slides or sheets. Split it."
        )
        % {"limit": figures.get("limit", "")},
        FailureCode.TOO_MANY_ROWS: _("A sheet has more than %(limit)s rows. Split it.")
        % {"limit": figures.get("limit", "")},
        FailureCode.NO_TEXT: _(
            "The file has no text to index (a scanned PDF without a text layer, or an empty file)."
        ),
        IngestFailure.FILE_MISSING: _("The stored file is missing. Upload it again."),
        IngestFailure.INTERRUPTED: _(
            "Indexing was interrupted %(attempts)s times (workers stopped). Re-index it; if it happens "
            "again, tell your operator."
        )
        % {"attempts": figures.get("attempts", "")},
        IngestFailure.NO_PASSAGES: _("The document's text made no passage to search."),
        IngestFailure.INTERNAL: _(
            "Indexing failed on an error of the platform; your operator's logs have it."
        ),
        IngestFailure.BUDGET_REACHED: _(
            "The budget “%(budget)s” is spent, so the passages were not embedded. Raise it or wait for its "
            "next period, then re-index."
        )
        % {"budget": figures.get("budget", "")},
        IngestFailure.EMBEDDING_UNREACHABLE: _(
            "The embedding endpoint “%(endpoint)s” did not answer (%(detail)s). Check it, then re-index."
        )
        % {"endpoint": figures.get("endpoint", ""), "detail": figures.get("detail", "")},
        IngestFailure.EMBEDDING_REFUSED: _(
            "The embedding endpoint “%(endpoint)s” refused the request (%(detail)s). Check its key and model "
            "name, then re-index."
        )
        % {"endpoint": figures.get("endpoint", ""), "detail": figures.get("detail", "")},
        IngestFailure.EMBEDDING_RATE_LIMITED: _(
            "The embedding endpoint “%(endpoint)s” limits the rate of requests. Re-index later."
        )
        % {"endpoint": figures.get("endpoint", "")},
        IngestFailure.EMBEDDING_BAD_ANSWER: _(
            "The embedding endpoint “%(endpoint)s” did not answer one vector per passage (%(detail)s). Check "
            "that its model is an embedding model, then re-index."
        )
        % {"endpoint": figures.get("endpoint", ""), "detail": figures.get("detail", "")},
        FetchFailure.REFUSED: _(
            "The SSRF guard refused the URL's address (%(reason)s). If the server is inside your network, add "
            "its host to the knowledge base's allowed private hosts."
        )
        % {"reason": figures.get("reason", "")},
        FetchFailure.UNREACHABLE: _("The URL could not be reached (%(error)s). Check it, then re-index.")
        % {"error": figures.get("error", "")},
        FetchFailure.TIMEOUT: _("The URL did not answer within %(seconds)s seconds. Re-index later.")
        % {"seconds": figures.get("seconds", "")},
        FetchFailure.HTTP_ERROR: _("The URL answered with HTTP status %(status)s. Check it, then re-index.")
        % {"status": figures.get("status", "")},
        FetchFailure.TOO_LARGE: _("The URL's document is over the limit of %(limit)s; it was not stored.")
        % {"limit": size("limit")},
    }
    return messages.get(code, _("Indexing failed (%(code)s).") % {"code": code})
