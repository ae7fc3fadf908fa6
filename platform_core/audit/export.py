"""Export of the audit log as CSV or JSON Lines, streamed (from the admin and the API).

Rows are read in keyset-paged batches in a worker thread and sent as they are ready, so an export of any
size never holds the log in memory nor blocks the event loop. CSV cells that a spreadsheet would run as a
formula (``=``, ``+``, ``-``, ``@``, tab, carriage return first) are prefixed with ``'``.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import datetime, time
from typing import Any, Literal

from asgiref.sync import sync_to_async
from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import Q, QuerySet
from django.http import StreamingHttpResponse
from django.utils import timezone, translation
from django.utils.dateparse import parse_date, parse_datetime
from django.utils.translation import gettext as _

from platform_core.audit.actions import audit_action_label
from platform_core.models import AuditLog

ExportFormat = Literal["csv", "jsonl"]
EXPORT_FORMATS: dict[str, str] = {"csv": "text/csv", "jsonl": "application/jsonl"}


def export_format(value: str) -> ExportFormat | None:
    """``value`` as an export format (a URL's ``csv`` or ``jsonl``), or None when it is not one."""
    if value == "csv":
        return "csv"
    if value == "jsonl":
        return "jsonl"
    return None


EXPORT_COLUMNS = (
    "time",
    "actor",
    "action",
    "action_label",
    "target_type",
    "target_id",
    "target",
    "before",
    "after",
    "ip_address",
)
BATCH_SIZE = 500
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


@dataclass(frozen=True, slots=True)
class AuditFilter:
    """Which entries an export (or a list) covers: ``since`` and ``until`` inclusive, one ``action``."""

    since: datetime | None = None
    until: datetime | None = None
    action: str = ""

    def apply(self, queryset: QuerySet[AuditLog]) -> QuerySet[AuditLog]:
        if self.since is not None:
            queryset = queryset.filter(created_at__gte=self.since)
        if self.until is not None:
            queryset = queryset.filter(created_at__lte=self.until)
        if self.action:
            queryset = queryset.filter(action=self.action)
        return queryset


@dataclass(frozen=True, slots=True)
class AuditFilterInvalid:
    field: str
    message: str


def _moment(value: str, *, end_of_day: bool) -> datetime | None:
    """An ISO date-time, or a date (its first or, for ``until``, its last moment); None if neither."""
    try:
        day = parse_date(value)
        moment = parse_datetime(value) if day is None else None
    except ValueError:
        return None
    if day is not None:
        moment = datetime.combine(day, time.max if end_of_day else time.min)
    if moment is None:
        return None
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment, timezone.get_current_timezone())
    return moment


def audit_filter_parse(params: Mapping[str, str]) -> AuditFilter | AuditFilterInvalid:
    """Read ``since``, ``until`` (ISO dates or date-times) and ``action`` from query parameters."""
    moments: dict[str, datetime | None] = {}
    for name in ("since", "until"):
        raw = (params.get(name) or "").strip()
        moments[name] = _moment(raw, end_of_day=name == "until") if raw else None
        if raw and moments[name] is None:
            return AuditFilterInvalid(name, _("Give a date (YYYY-MM-DD) or an ISO 8601 date and time."))
    return AuditFilter(
        since=moments["since"], until=moments["until"], action=(params.get("action") or "").strip()
    )


def _record(entry: AuditLog) -> dict[str, Any]:
    return {
        "time": entry.created_at.isoformat(),
        "actor": entry.actor.get_username() if entry.actor is not None else "",
        "action": entry.action,
        "action_label": audit_action_label(entry.action),
        "target_type": entry.target_type,
        "target_id": entry.target_id,
        "target": entry.target_repr,
        "before": entry.before,
        "after": entry.after,
        "ip_address": entry.ip_address or "",
    }


def _cell(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, cls=DjangoJSONEncoder, ensure_ascii=False)
    return f"'{text}" if text.startswith(_FORMULA_STARTS) else text


def _csv_line(values: list[str]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer).writerow(values)
    return buffer.getvalue()


def _encode(record: dict[str, Any], fmt: ExportFormat) -> str:
    if fmt == "csv":
        return _csv_line([_cell(record[c]) for c in EXPORT_COLUMNS])
    return json.dumps(record, cls=DjangoJSONEncoder, ensure_ascii=False) + "\n"


def _batch(
    queryset: QuerySet[AuditLog], after: tuple[datetime, int] | None, fmt: ExportFormat, language: str
) -> tuple[str, tuple[datetime, int] | None]:
    rows = queryset.order_by("created_at", "id").select_related("actor")
    if after is not None:
        rows = rows.filter(Q(created_at__gt=after[0]) | Q(created_at=after[0], id__gt=after[1]))
    entries = list(rows[:BATCH_SIZE])
    with translation.override(language):
        text = "".join(_encode(_record(e), fmt) for e in entries)
    last = (entries[-1].created_at, entries[-1].pk) if len(entries) == BATCH_SIZE else None
    return text, last


async def audit_export_chunks(
    queryset: QuerySet[AuditLog], fmt: ExportFormat, language: str
) -> AsyncIterator[str]:
    """The export of ``queryset``, oldest entry first, one batch of lines per chunk."""
    if fmt == "csv":
        yield "\ufeff" + _csv_line(list(EXPORT_COLUMNS))  # the BOM lets spreadsheets read UTF-8
    after: tuple[datetime, int] | None = None
    while True:
        text, after = await sync_to_async(_batch)(queryset, after, fmt, language)
        if text:
            yield text
        if after is None:
            return


def audit_export_response(
    *, queryset: QuerySet[AuditLog], fmt: ExportFormat, name: str
) -> StreamingHttpResponse:
    """A streamed download of ``queryset`` named ``<name>-<today>.<fmt>``, labels in the active language."""
    response = StreamingHttpResponse(
        audit_export_chunks(queryset, fmt, translation.get_language() or "en"),
        content_type=f"{EXPORT_FORMATS[fmt]}; charset=utf-8",
    )
    response["Content-Disposition"] = f'attachment; filename="{name}-{timezone.localdate():%Y-%m-%d}.{fmt}"'
    response["Cache-Control"] = "no-store"
    return response
