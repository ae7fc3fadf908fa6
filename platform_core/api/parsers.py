"""The REST API's request parsers: DRF's JSON and form parsers with the body's size and nesting bounded.

DRF reads a JSON body from the request stream, past Django's ``DATA_UPLOAD_MAX_MEMORY_SIZE``; these
parsers read at most ``API_MAX_JSON_BYTES`` (413 above it) and refuse JSON nested deeper than
:data:`~platform_core.api.json_bounds.MAX_JSON_DEPTH` (400) before decoding it, so neither a huge body nor
``[[[[…`` reaches the decoder.
"""

from __future__ import annotations

import io
import json
from typing import Any

from django.conf import settings
from django.utils.translation import gettext_lazy as _
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import FormParser, JSONParser
from rest_framework.settings import api_settings
from rest_framework.utils.json import strict_constant

from platform_core.api.json_bounds import MAX_JSON_DEPTH, json_nesting_exceeds

DEFAULT_MAX_JSON_BYTES = 10 * 1024 * 1024  # room for a large OpenAPI document to import


class PayloadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = _("The request body is too large.")
    default_code = "too_large"


def max_body_bytes() -> int:
    """``API_MAX_JSON_BYTES``: the largest JSON or form body the REST API reads."""
    return int(getattr(settings, "API_MAX_JSON_BYTES", DEFAULT_MAX_JSON_BYTES))


def read_bounded(stream: Any) -> bytes:
    """The request body, or :class:`PayloadTooLarge` past :func:`max_body_bytes` (read no further)."""
    if stream is None:
        return b""
    limit = max_body_bytes()
    raw = stream.read(limit + 1)
    if len(raw) > limit:
        raise PayloadTooLarge()
    return raw


def _encoding(parser_context: dict[str, Any] | None) -> str:
    return (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)


class BoundedJSONParser(JSONParser):
    """DRF's JSON parser (strict: no ``NaN``) behind the size and nesting bounds."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: dict | None = None) -> Any:
        raw = read_bounded(stream)
        try:
            text = raw.decode(_encoding(parser_context))
        except (UnicodeDecodeError, LookupError) as exc:
            raise ParseError(_("JSON parse error - the body is not text in its declared encoding.")) from exc
        if json_nesting_exceeds(text, MAX_JSON_DEPTH):
            raise ParseError(
                _("JSON parse error - nested deeper than %(depth)d levels.") % {"depth": MAX_JSON_DEPTH}
            )
        parse_constant = strict_constant if api_settings.STRICT_JSON else None
        try:
            return json.loads(text, parse_constant=parse_constant)
        except (ValueError, RecursionError) as exc:
            raise ParseError(_("JSON parse error - %(error)s") % {"error": exc}) from exc


class BoundedFormParser(FormParser):
    """DRF's form parser (``application/x-www-form-urlencoded``) behind the size bound."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: dict | None = None) -> Any:
        return super().parse(io.BytesIO(read_bounded(stream)), media_type, parser_context)
