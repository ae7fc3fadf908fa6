"""Sending the members' invitation e-mails, with a typed answer to what became of each (issue 32).

The page tells the admin the truth: sent through the mail server, written into the mail folder or printed
on the console by a development backend (they pass the link on themselves), or failed. A failed send is
one warning line, never a traceback, and never undoes the invitation.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

from django.conf import settings
from django.core.mail import get_connection, send_mail
from django.core.mail.backends import console, dummy, filebased

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class MailSent:
    """The mail backend accepted the message for delivery (an SMTP server, or a provider's API)."""

    type: Literal["sent"] = "sent"


@dataclass(frozen=True, slots=True)
class MailWritten:
    """No mail server is configured: the message is a file in ``folder`` (the embedded default)."""

    folder: str
    type: Literal["written"] = "written"


@dataclass(frozen=True, slots=True)
class MailPrinted:
    """The console backend printed the message in the server's output."""

    type: Literal["printed"] = "printed"


@dataclass(frozen=True, slots=True)
class MailDiscarded:
    """The dummy backend threw the message away."""

    type: Literal["discarded"] = "discarded"


@dataclass(frozen=True, slots=True)
class MailFailed:
    """The backend refused or could not reach its server; ``reason`` is short and safe to show."""

    reason: str
    type: Literal["failed"] = "failed"


MailDelivery = MailSent | MailWritten | MailPrinted | MailDiscarded | MailFailed


def invitation_mail_send(*, to: str, subject: str, body: str) -> MailDelivery:
    """Send one invitation e-mail to ``to`` and say what became of it."""
    connection = get_connection(fail_silently=False)
    try:
        send_mail(subject, body, None, [to], connection=connection)
    except Exception as exc:  # any backend's failure: the invitation stands, the admin passes the link on
        reason = f"{type(exc).__name__}: {exc}"[:200]
        logger.warning("an invitation e-mail could not be sent: %s", reason)
        return MailFailed(reason)
    if isinstance(connection, filebased.EmailBackend):  # before console: the file backend extends it
        return MailWritten(str(getattr(connection, "file_path", settings.EMAIL_FILE_PATH)))
    if isinstance(connection, console.EmailBackend):
        return MailPrinted()
    if isinstance(connection, dummy.EmailBackend):
        return MailDiscarded()
    return MailSent()
