"""Why an attachment was refused, in words the person who sent it can act on, in their language.

A refusal is a code and its figures (:class:`AttachmentRefused`); the message is made when it is shown,
in the active language. The codes are the knowledge bases' where the reason is the same (a file too large,
of a format the platform does not read, whose extension lies, a ZIP bomb, a password-protected file, a
damaged one: :mod:`agents.knowledge.formats`, :mod:`agents.knowledge.parsing`), and the packages' messages
are the knowledge bases' own; the rest are the attachments' own (:class:`AttachmentRefusal`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from django.template.defaultfilters import filesizeformat
from django.utils.translation import gettext as _

from agents.attachments.sniffing import FailureCode
from agents.knowledge.failures import failure_message
from agents.knowledge.formats import RefusalCode


class AttachmentRefusal(StrEnum):
    """Refusals of the attachments' own, besides the file checks' codes."""

    QUOTA_EXCEEDED = "quota_exceeded"  # the organisation's attachments would pass its storage quota
    INCOMPLETE_UPLOAD = "incomplete_upload"  # the request's body ended before its last file did
    NOT_FOUND = "not_found"  # an attachment to bind is missing, another's, or another organisation's
    ALREADY_BOUND = "already_bound"  # it belongs to a message already
    ATTACHMENTS_TOO_LARGE = "attachments_too_large"  # one message's attachments together pass the limit


@dataclass(frozen=True, slots=True)
class AttachmentRefused:
    """Nothing was stored or changed, for the reason ``code`` (with its ``figures``)."""

    code: str
    figures: dict[str, int | str] = field(default_factory=dict)

    @property
    def message(self) -> str:
        """The reason in the active language."""
        return refusal_message(self.code, self.figures)


# The knowledge bases' messages that read as well for a chat's attachment.
_SHARED = frozenset(
    {
        RefusalCode.UNREADABLE_PACKAGE,
        RefusalCode.UNPACKS_TOO_LARGE,
        RefusalCode.COMPRESSION_TOO_HIGH,
        RefusalCode.TOO_MANY_MEMBERS,
        RefusalCode.ENCRYPTED,
        RefusalCode.NOT_TEXT,
        FailureCode.MALFORMED,
    }
)


def refusal_message(code: str, figures: Mapping[str, object] | None = None) -> str:
    """The sender's explanation of the refusal ``code`` (in the active language)."""
    figures = dict(figures or {})
    if code in _SHARED:
        return failure_message(code, figures)

    def size(key: str) -> str:
        value = figures.get(key, 0)
        return filesizeformat(value if isinstance(value, int) else 0)

    if code == RefusalCode.TOO_LARGE:
        return _("The file is larger than the limit of %(limit)s for one file.") % {"limit": size("limit")}
    if code == RefusalCode.UNKNOWN_FORMAT:
        return _(
            "Files ending in “%(extension)s” cannot be attached. Attach PDF, Word (DOCX), Excel (XLSX), "
            "PowerPoint (PPTX), CSV, Markdown, HTML or text documents, or PNG, JPEG, GIF or WebP pictures."
        ) % {"extension": figures.get("extension") or _("(no extension)")}
    if code == RefusalCode.EXTENSION_MISMATCH:
        return _(
            "The file's content is not what its name says (%(named)s). Save it again in that format, or "
            "rename it to the right extension."
        ) % {"named": figures.get("named", "")}
    if code == FailureCode.EMPTY:
        return _("The file is empty.")
    if code == FailureCode.TOO_MANY_PIXELS:
        return _(
            "The picture has more than %(limit)s pixels, beyond any real photo or screenshot; it was not "
            "opened. Scale it down and attach it again."
        ) % {"limit": f"{figures.get('limit', 0):,}"}
    if code == AttachmentRefusal.QUOTA_EXCEEDED:
        return _(
            "Your organisation's files take %(used)s of its %(quota)s; this one would not fit. Delete files "
            "you no longer need, or ask an administrator."
        ) % {"used": size("used"), "quota": size("quota")}
    if code == AttachmentRefusal.INCOMPLETE_UPLOAD:
        return _("The upload was cut off before its last file ended; nothing was stored. Send it again.")
    if code == AttachmentRefusal.NOT_FOUND:
        return _("An attached file is no longer available. Attach it again.")
    if code == AttachmentRefusal.ALREADY_BOUND:
        return _("An attached file was already sent with another message. Attach it again.")
    if code == AttachmentRefusal.ATTACHMENTS_TOO_LARGE:
        return _("The files attached to one message may take %(limit)s together; these take %(size)s.") % {
            "limit": size("limit"),
            "size": size("size"),
        }
    return _("The file was refused (%(code)s).") % {"code": code}
