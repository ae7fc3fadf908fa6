"""The user's interface language a run is started in: what its stop and fallback messages are written in.

It is the language the user chose in the web app (the language cookie), else the first supported language
of their client's ``Accept-Language``. When neither names one, it is unknown (``""``) and the engine
follows the question's language instead of the site's default.
"""

from __future__ import annotations

from django.conf import settings
from django.utils import translation


def interface_language(*, cookie: str | None = None, accept_language: str = "") -> str:
    """A supported language code from the language ``cookie`` or the ``Accept-Language`` header, else ``""``."""
    if cookie:
        try:
            return translation.get_supported_language_variant(cookie)
        except LookupError:
            pass
    for part in accept_language.split(","):
        code = part.split(";")[0].strip().lower()
        if not code or code == "*":
            continue
        try:
            return translation.get_supported_language_variant(code)
        except LookupError:
            continue
    return ""


def interface_language_of_request(request: object) -> str:
    """:func:`interface_language` of an HTTP request (Django's or DRF's)."""
    cookies = getattr(request, "COOKIES", {}) or {}
    meta = getattr(request, "META", {}) or {}
    return interface_language(
        cookie=cookies.get(settings.LANGUAGE_COOKIE_NAME),
        accept_language=meta.get("HTTP_ACCEPT_LANGUAGE", ""),
    )
