"""Compact text tables of query results for the LLM: a header, one line per row, a footer.

    id | name | total
    1 | Acme | 12.50
    2 | Globex | NULL
    (2 rows)

Cells are single-line (line breaks and ``|`` escaped) and cut at :data:`MAX_CELL_CHARS`; the table
stops before it passes the byte budget and says how many rows it left out. A value too large to
fetch whole arrives as a :class:`CutValue` (the database cut it) and is shown ending in ``…``.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

MAX_CELL_CHARS = 500


@dataclass(frozen=True, slots=True)
class CutValue:
    """A value the database cut before sending it: the start of its text, or a binary value's size."""

    head: str = ""
    byte_count: int | None = None


@dataclass(frozen=True, slots=True)
class RenderedTable:
    """The table text, how many rows it shows, and whether anything was left out."""

    text: str
    rows_shown: int
    truncated: bool


def _one_line(text: str) -> str:
    text = text.replace("\\", "\\\\").replace("\r", "\\r").replace("\n", "\\n").replace("|", "\\|")
    return text if len(text) <= MAX_CELL_CHARS else text[: MAX_CELL_CHARS - 1] + "…"


def render_cell(value: Any) -> str:
    """One value as table text: NULL, true/false, ISO dates, compact JSON, a size for binary data."""
    if value is None:
        return "NULL"
    if isinstance(value, CutValue):
        if value.byte_count is not None:
            return f"<{value.byte_count} bytes>"
        return _one_line(value.head)[: MAX_CELL_CHARS - 1] + "…"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes | bytearray | memoryview):
        return f"<{len(value)} bytes>"
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, dict | list | tuple):
        return _one_line(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))
    return _one_line(str(value))


def render_table(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], *, more_rows: bool, max_bytes: int
) -> RenderedTable:
    """Render ``rows`` under ``columns``; ``more_rows`` means the query had rows beyond these."""
    lines = [" | ".join(_one_line(c) for c in columns)]
    size = len(lines[0].encode()) + 1
    budget = max(0, max_bytes - 100)  # room for the footer
    shown = 0
    for row in rows:
        line = " | ".join(render_cell(v) for v in row)
        line_size = len(line.encode()) + 1
        if size + line_size > budget:
            break
        lines.append(line)
        size += line_size
        shown += 1
    left_out = len(rows) - shown
    if left_out:
        at_least = "at least " if more_rows else ""
        lines.append(f"({at_least}{left_out} more rows not shown: result size limit of {max_bytes} bytes)")
    elif more_rows:
        lines.append(f"(more rows not shown: only the first {shown} rows are returned)")
    elif shown == 0:
        lines.append("(no rows)")
    else:
        lines.append(f"({shown} row{'s' if shown != 1 else ''})")
    return RenderedTable(text="\n".join(lines), rows_shown=shown, truncated=bool(left_out or more_rows))
