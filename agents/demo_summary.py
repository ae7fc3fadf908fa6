"""Readable Markdown for a tool result, for the offline demo model's answers.

A JSON list of records becomes a table (its scalar columns, at most ``MAX_COLUMNS``, ``MAX_ROWS`` rows),
one record becomes its fields one per line (with its lists of records as tables), a database connector's
compact text table (``connectors.sql.tables``: a header, one line per row, a footer in parentheses) becomes a
Markdown table with its footer below, and anything else is its own text as a paragraph that wraps. Cells are single lines with ``|`` escaped, so no value can break
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


def _cells(line: str) -> list[str]:
    """The cells of one line of a compact text table: split on `` | `` outside a backslash escape."""
    cells, current, i = [], [], 0
    while i < len(line):
        if line[i] == "\\" and i + 1 < len(line):
            current.append(line[i : i + 2])
            i += 2
        elif line.startswith(" | ", i):
            cells.append("".join(current))
            current, i = [], i + 3
        else:
            current.append(line[i])
            i += 1
    return [*cells, "".join(current)]


def _text_table(content: str, zh: bool) -> str | None:
    """A compact text table (header, rows of as many cells, a parenthesised footer) as Markdown, or
    ``None`` when ``content`` is not one. Cells keep their escapes: ``\\|`` is also Markdown's."""
    lines = content.strip().splitlines()
    if len(lines) < 2 or not (lines[-1].startswith("(") and lines[-1].endswith(")")):
        return None
    rows = [_cells(line) for line in lines[:-1]]
    width = len(rows[0])
    if width < 2 or any(len(row) != width for row in rows):
        return None
    table = [
        "| " + " | ".join(rows[0]) + " |",
        "|" + "|".join("---" for _ in rows[0]) + "|",
        *("| " + " | ".join(row) + " |" for row in rows[1 : MAX_ROWS + 1]),
    ]
    footer = lines[-1]
    if len(rows) - 1 > MAX_ROWS:
        footer = _MORE[zh].format(n=len(rows) - 1 - MAX_ROWS) + " " + footer
    return "\n".join(table) + "\n\n" + footer


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
    return _text_table(content, zh) or _text(content) or _NO_RESULTS[zh]


_PASSAGE = re.compile(r"^\[(\d+)\] ([^\n]+)\n(.*?)(?=\n\n\[\d+\] |\Z)", re.S | re.M)


def knowledge_answer(content: str, *, zh: bool) -> str | None:
    """The answer a knowledge-base search gives (its numbered passages, ``[1] source\\ntext``): the
    best passage, cited, and its source; ``None`` for any other tool result."""
    found = _PASSAGE.findall(content)
    if not found:
        return None
    number, source, text = found[0]
    head = "知识库中的相关内容：" if zh else "The knowledge base says:"
    return f"{head}\n\n{text.strip()} [{number}]\n\n{'来源' if zh else 'Source'}: [{number}] {source}"
