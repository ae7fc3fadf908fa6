"""Extra HTTP headers of a model endpoint: parsed from the admin's JSON and checked before they are stored.

Gateways put secrets in these headers (their own keys, tenant ids), so the values are stored encrypted and
never shown again; the names may be shown. A header may not take over what the client sets itself: the
hop-by-hop fields of one connection (RFC 9110 section 7.6.1, https://www.rfc-editor.org/rfc/rfc9110#section-7.6.1:
Connection, Proxy-Connection, Keep-Alive, TE, Transfer-Encoding, Upgrade, and the Trailer field), Host, the
body's framing (Content-Length, Content-Type), and the credentials (Authorization, Proxy-Authorization,
Azure's api-key, Cookie): the API key has its own field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

MAX_HEADERS = 20
MAX_VALUE_CHARS = 4000

# RFC 9110 section 5.1: a field name is a token (https://www.rfc-editor.org/rfc/rfc9110#section-5.1).
_NAME_RE = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$")
# RFC 9110 section 5.5: field values are visible characters, spaces and tabs; no CR, LF or NUL
# (https://www.rfc-editor.org/rfc/rfc9110#section-5.5).
_VALUE_RE = re.compile(r"^[\t\x20-\x7e\x80-\xff]*$")
_ASCII_VALUE_RE = re.compile(r"[\t\x20-\x7e]*")

# The API key travels in a header (``Authorization: Bearer …`` or Azure's ``api-key``), which the client
# encodes as ASCII: visible ASCII only, no spaces, no line breaks (RFC 6750's b64token is narrower still).
_KEY_RE = re.compile(r"[\x21-\x7e]+")

REFUSED_HEADERS = frozenset(
    {
        "connection",
        "proxy-connection",
        "keep-alive",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "content-type",
        "authorization",
        "proxy-authorization",
        "api-key",
        "cookie",
    }
)


def headers_parse(raw: str) -> dict[str, str]:
    """The headers of ``raw`` (a JSON object of name -> value, or empty), validated.

    Raises ``ValidationError`` naming what is wrong, never a value.
    """
    text = (raw or "").strip()
    if not text:
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValidationError(
            _('Give the headers as a JSON object, for example {"X-Gateway-Key": "..."}.')
        ) from exc
    if not isinstance(data, dict):
        raise ValidationError(_('Give the headers as a JSON object, for example {"X-Gateway-Key": "..."}.'))
    return headers_validate(data)


def headers_validate(data: Mapping[str, object]) -> dict[str, str]:
    """``data`` checked as extra request headers: token names, printable string values, none refused."""
    if len(data) > MAX_HEADERS:
        raise ValidationError(_("At most %(count)d headers.") % {"count": MAX_HEADERS})
    seen: set[str] = set()
    clean: dict[str, str] = {}
    for name, value in data.items():
        if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
            raise ValidationError(_("“%(name)s” is not an HTTP header name.") % {"name": str(name)[:100]})
        lowered = name.lower()
        if lowered in REFUSED_HEADERS:
            raise ValidationError(
                _("The header “%(name)s” is set by the client itself and cannot be overridden.")
                % {"name": name}
            )
        if lowered in seen:
            raise ValidationError(_("The header “%(name)s” is given twice.") % {"name": name})
        seen.add(lowered)
        if not isinstance(value, str):
            raise ValidationError(_("The value of “%(name)s” must be a string.") % {"name": name})
        if len(value) > MAX_VALUE_CHARS or not _VALUE_RE.fullmatch(value):
            raise ValidationError(
                _("The value of “%(name)s” must be one line of printable characters (at most %(max)d).")
                % {"name": name, "max": MAX_VALUE_CHARS}
            )
        clean[name] = value.strip()
    return clean


def api_key_sendable(key: str) -> bool:
    """Whether ``key`` can travel in a request header (an empty key is no key, and sendable)."""
    return not key or _KEY_RE.fullmatch(key) is not None


def headers_sendable(headers: Mapping[str, str]) -> bool:
    """Whether the client can send these header values: it encodes them as ASCII, so the obsolete
    non-ASCII bytes RFC 9110 still parses (``obs-text``, which :func:`headers_validate` lets through for
    values stored before) cannot be sent."""
    return all(_ASCII_VALUE_RE.fullmatch(value) for value in headers.values())


def headers_dump(headers: Mapping[str, str]) -> str:
    """The stored form of validated headers (empty when there are none)."""
    return json.dumps(dict(headers), ensure_ascii=False, sort_keys=True) if headers else ""
