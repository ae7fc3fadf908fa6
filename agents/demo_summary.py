"""Readable Markdown for a tool result, for the offline demo model's answers.

A JSON list of records becomes a table (its scalar columns, at most ``MAX_COLUMNS``, ``MAX_ROWS`` rows),
one record becomes its fields one per line (with its lists of records as tables), and anything else is
its own text as a paragraph that wraps. Cells are single lines with ``|`` escaped, so no value can break
the table; the chat's renderer escapes HTML itself.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_ROWS = 25
MAX_COLUMNS = 6
MAX_CELL = 80
MAX_TEXT = 1200
_CUT_MARK = re.compile(r"… \[cut: \d+ more characters\]\s*$")
_NO_RESULTS = ("No results.", "没有结果。")
_MORE = ("… and {n} more", "……还有 {n} 条")


def _decode(content: str) -> Any:
    """The JSON value of ``content``, or ``None`` when it is not (all of) one JSON value."""
    text = content.strip()
    if not text or text[0] not in "[{":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _label(key: str) -> str:
    words = re.sub(r"[_\-]+", " ", key).strip()
    return words[:1].upper() + words[1:] if words else key


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        text = "yes" if value else "no"
    else:
        text = str(value)
    text = " ".join(text.split())
    if len(text) > MAX_CELL:
        text = text[: MAX_CELL - 1] + "…"
    return text.replace("|", "\\|")


def _table(rows: list[dict[str, Any]], zh: bool) -> str:
    columns: list[str] = []
    for row in rows:
        for key, value in row.items():
            if key not in columns and _scalar(value):
                columns.append(key)
    # Columns that say something: not empty in every row; an "id" next to a "number" says nothing new.
    columns = [c for c in columns if any(row.get(c) not in (None, "") for row in rows)]
    if "id" in columns and "number" in columns:
        columns.remove("id")
    columns = columns[:MAX_COLUMNS]
    if not columns:
        return _NO_RESULTS[zh]
    lines = [
        "| " + " | ".join(_label(c) for c in columns) + " |",
        "|" + "|".join("---" for _ in columns) + "|",
    ]
    lines += ["| " + " | ".join(_cell(row.get(c)) for c in columns) + " |" for row in rows[:MAX_ROWS]]
    if len(rows) > MAX_ROWS:
        lines.append("")
        lines.append(_MORE[zh].format(n=len(rows) - MAX_ROWS))
    return "\n".join(lines)


def _record(record: dict[str, Any], zh: bool) -> str:
    lines = [f"- **{_label(key)}**: {_cell(value)}" for key, value in record.items() if _scalar(value)]
    blocks = ["\n".join(lines)] if lines else []
    for key, value in record.items():
        if isinstance(value, list) and all(isinstance(item, dict) for item in value):
            table = _table(value, zh) if value else _NO_RESULTS[zh]
            blocks.append(f"**{_label(key)}**\n\n{table}")
    return "\n\n".join(blocks) if blocks else _NO_RESULTS[zh]


def _text(content: str) -> str:
    text = " ".join(content.split())
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def tool_result_markdown(content: str, *, zh: bool) -> str:
    """``content`` (a tool's result) as Markdown a person reads without scrolling sideways."""
    value = _decode(_CUT_MARK.sub("", content))
    if isinstance(value, list):
        if not value:
            return _NO_RESULTS[zh]
        if all(isinstance(item, dict) for item in value):
            return _table(value, zh)
        if all(_scalar(item) for item in value):
            shown = [f"- {_cell(item)}" for item in value[:MAX_ROWS]]
            if len(value) > MAX_ROWS:
                shown.append(_MORE[zh].format(n=len(value) - MAX_ROWS))
            return "\n".join(shown)
    if isinstance(value, dict):
        return _record(value, zh)
    return _text(content) or _NO_RESULTS[zh]
