"""Renderers and content negotiation of the audit export: the format comes from ``?format=`` only
(``csv`` by default), whatever the client's Accept header says; an unknown format is a 400."""

from __future__ import annotations

import json
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.utils.translation import gettext as _
from rest_framework.exceptions import ValidationError
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer


class _ExportRenderer(BaseRenderer):
    """The export itself is a streamed response; this renders only errors (as JSON text)."""

    charset = "utf-8"

    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None
    ) -> bytes:
        if data is None:
            return b""
        return json.dumps(data, cls=DjangoJSONEncoder, ensure_ascii=False).encode()


class CSVRenderer(_ExportRenderer):
    media_type = "text/csv"
    format = "csv"


class JSONLinesRenderer(_ExportRenderer):
    media_type = "application/jsonl"
    format = "jsonl"


class ByFormatParameter(DefaultContentNegotiation):
    def select_renderer(self, request: Any, renderers: Any, format_suffix: str | None = None) -> Any:
        wanted = format_suffix or request.query_params.get(self.settings.URL_FORMAT_OVERRIDE) or "csv"
        for renderer in renderers:
            if renderer.format == wanted:
                return renderer, renderer.media_type
        raise ValidationError({"format": [_("Choose csv or jsonl.")]})
