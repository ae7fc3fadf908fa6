"""A checked upload read into Markdown pages: one per page of a PDF, slide of a PPTX or sheet of an
XLSX, one for the other formats. Django-free; run it on a file :func:`agents.knowledge.formats.file_checked`
accepted.

| format | read with | what becomes Markdown |
|---|---|---|
| PDF | pypdf | each page's text |
| DOCX | python-docx | paragraphs in order; ``Title`` and ``Heading N`` styles as headings, list styles as items, tables as tables |
| XLSX | openpyxl (read-only) | each sheet as a table, its first row with a value as the header |
| PPTX | python-pptx | each slide: its title as a heading, its text, its tables |
| CSV | csv | one table |
| HTML | BeautifulSoup, markdownify | headings, paragraphs, lists, tables (not scripts, styles or the head) |
| Markdown, text | (none) | as written, decoded as UTF-8 or GB18030 |

With ``ParseLimits.max_characters`` a reader stops once it has made that much text (a chat attachment
shows only its beginning): a spreadsheet is then read only down to the row that passes it, and the pages
and rows beyond the limits are not counted (``Parsed.complete`` is false).

The outcome is typed: :class:`Parsed` with the pages, or :class:`ParseFailed` with a :class:`FailureCode`
(an encrypted or malformed file, more pages or rows than allowed, no text at all: a scanned PDF) that the
admin shows translated. A library's error on a malformed file ends here as ``MALFORMED`` (naming the
error's type), never in the worker.
"""

from __future__ import annotations

import csv
import datetime
import io
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, BinaryIO

from agents.knowledge.formats import DocumentFormat

__all__ = ["FailureCode", "ParseFailed", "ParseLimits", "Parsed", "document_parsed"]


class FailureCode(StrEnum):
    ENCRYPTED = "encrypted"
    MALFORMED = "malformed"
    TOO_MANY_PAGES = "too_many_pages"  # pages, slides or sheets
    TOO_MANY_ROWS = "too_many_rows"  # of one sheet or CSV
    NO_TEXT = "no_text"  # nothing to index: a scanned PDF without a text layer, an empty file


@dataclass(frozen=True, slots=True)
class ParseLimits:
    max_pages: int = 2000  # pages, slides or sheets
    max_rows: int = 100_000  # rows of one sheet or CSV
    max_characters: int | None = None  # stop reading once this much text is made (None: read it all)


@dataclass(frozen=True, slots=True)
class Parsed:
    pages: tuple[str, ...]
    complete: bool = True  # false: reading stopped at ``ParseLimits.max_characters``

    @property
    def page_count(self) -> int:
        return len(self.pages)


@dataclass(frozen=True, slots=True)
class ParseFailed:
    code: FailureCode
    figures: dict[str, int | str] = field(default_factory=dict)


ParseOutcome = Parsed | ParseFailed


class _Failed(Exception):
    """A reader's way out with a typed failure (caught in :func:`document_parsed`)."""

    def __init__(self, failure: ParseFailed) -> None:
        self.failure = failure


class _Reading:
    """One file's reading: its limits, and how much text it has made against ``max_characters``."""

    def __init__(self, limits: ParseLimits) -> None:
        self.limits = limits
        self.left = limits.max_characters
        self.stopped = False

    def took(self, text_length: int) -> bool:
        """Count ``text_length`` more characters made; false once the reading has made enough."""
        if self.left is None:
            return True
        self.left -= text_length
        if self.left < 0:
            self.stopped = True
        return not self.stopped

    def count(self, pages: int) -> None:
        """Refuse more pages than allowed, unless the reading stops early anyway."""
        if self.left is None and pages > self.limits.max_pages:
            raise _Failed(
                ParseFailed(FailureCode.TOO_MANY_PAGES, {"pages": pages, "limit": self.limits.max_pages})
            )


def document_parsed(fmt: DocumentFormat, file: BinaryIO, limits: ParseLimits | None = None) -> ParseOutcome:
    """The Markdown pages of ``file``, read as ``fmt`` (only its beginning with ``limits.max_characters``)."""
    reading = _Reading(limits or ParseLimits())
    try:
        pages = tuple(page.strip() for page in _READERS[fmt](file, reading))
    except _Failed as failed:
        return failed.failure
    except Exception as exc:  # a library refusing a malformed file, whatever its error type
        return ParseFailed(FailureCode.MALFORMED, {"error": type(exc).__name__})
    if not any(pages):
        return ParseFailed(FailureCode.NO_TEXT)
    return Parsed(pages, complete=not reading.stopped)


def _pdf(file: BinaryIO, reading: _Reading) -> list[str]:
    from pypdf import PdfReader

    reader = PdfReader(file)
    if reader.is_encrypted and not reader.decrypt(""):  # an owner password alone still reads
        raise _Failed(ParseFailed(FailureCode.ENCRYPTED))
    reading.count(len(reader.pages))
    pages = []
    for page in reader.pages:
        pages.append(page.extract_text() or "")
        if not reading.took(len(pages[-1])):
            break
    return pages


def _docx(file: BinaryIO, reading: _Reading) -> list[str]:
    from docx import Document
    from docx.table import Table

    blocks: list[str] = []
    for item in Document(file).iter_inner_content():
        block = (
            _table([[cell.text for cell in row.cells] for row in item.rows])
            if isinstance(item, Table)
            else _paragraph(item.text.strip(), item.style.name if item.style is not None else "")
        )
        if not block:
            continue
        blocks.append(block)
        if not reading.took(len(block)):
            break
    return ["\n\n".join(blocks)]


def _paragraph(text: str, style: str) -> str:
    """A DOCX paragraph as Markdown: ``Title`` and ``Heading N`` styles as headings, list styles as items."""
    if not text:
        return ""
    if style == "Title":
        return f"# {text}"
    if style.startswith("Heading ") and style[8:].isdigit():
        return f"{'#' * min(int(style[8:]), 6)} {text}"
    if "List" in style:
        return f"- {text}"
    return text


def _xlsx(file: BinaryIO, reading: _Reading) -> list[str]:
    from openpyxl import load_workbook

    workbook = load_workbook(file, read_only=True, data_only=True)
    try:
        reading.count(len(workbook.worksheets))
        pages = []
        for sheet in workbook.worksheets:
            rows = _bounded(sheet.iter_rows(values_only=True), reading)
            pages.append(f"## {sheet.title}\n\n{_table(rows)}" if rows else "")
            if reading.stopped:
                break
        return pages
    finally:
        workbook.close()


def _pptx(file: BinaryIO, reading: _Reading) -> list[str]:
    from pptx import Presentation

    slides = Presentation(file).slides
    reading.count(len(slides))
    pages = []
    for slide in slides:
        title = slide.shapes.title
        blocks = [f"## {title.text_frame.text.strip()}"] if title is not None and title.has_text_frame else []
        for shape in slide.shapes:
            if title is not None and shape.shape_id == title.shape_id:
                continue
            if shape.has_text_frame and shape.text_frame.text.strip():
                blocks.append(shape.text_frame.text.strip())
            elif getattr(shape, "has_table", False):
                blocks.append(_table([[cell.text for cell in row.cells] for row in shape.table.rows]))
        pages.append("\n\n".join(blocks))
        if not reading.took(len(pages[-1])):
            break
    return pages


def _csv(file: BinaryIO, reading: _Reading) -> list[str]:
    rows = _bounded(csv.reader(io.StringIO(_decoded(file.read()))), reading)
    return [_table(rows)]


def _html(file: BinaryIO, reading: _Reading) -> list[str]:
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(_decoded(file.read()), "html.parser")
    for hidden in soup(["script", "style", "noscript", "template", "head"]):
        hidden.decompose()  # what a browser does not show is not the document's text
    return [MarkdownConverter(heading_style="ATX").convert_soup(soup)]


def _text(file: BinaryIO, reading: _Reading) -> list[str]:
    return [_decoded(file.read())]


_READERS: dict[DocumentFormat, Callable[[BinaryIO, _Reading], list[str]]] = {
    DocumentFormat.PDF: _pdf,
    DocumentFormat.DOCX: _docx,
    DocumentFormat.XLSX: _xlsx,
    DocumentFormat.PPTX: _pptx,
    DocumentFormat.CSV: _csv,
    DocumentFormat.HTML: _html,
    DocumentFormat.MARKDOWN: _text,
    DocumentFormat.TEXT: _text,
}


def _bounded(rows: Iterable[Sequence[Any]], reading: _Reading) -> list[list[str]]:
    kept: list[list[str]] = []
    for row in rows:
        cells = [_value_text(value) for value in row]
        if not any(cell.strip() for cell in cells):
            continue
        if len(kept) == reading.limits.max_rows and reading.left is None:
            raise _Failed(ParseFailed(FailureCode.TOO_MANY_ROWS, {"limit": reading.limits.max_rows}))
        kept.append(cells)
        if not reading.took(sum(len(cell) + 3 for cell in cells)):  # a table line: "| a | b |"
            break
    return kept


def _value_text(value: object) -> str:
    """A cell's value as text: a date without a time of day as the date alone (``2024-03-24``)."""
    if value is None:
        return ""
    if isinstance(value, datetime.datetime) and value.time() == datetime.time(0):
        return value.date().isoformat()
    return str(value)


def _table(rows: Sequence[Sequence[str]]) -> str:
    """``rows`` as a Markdown table, the first as its header (cells' pipes escaped, line breaks as spaces)."""
    if not rows:
        return ""
    width = max(len(row) for row in rows)

    def line(row: Sequence[str]) -> str:
        cells = [_cell(cell) for cell in row] + [""] * (width - len(row))
        return "| " + " | ".join(cells) + " |"

    return "\n".join(_lines(line, rows, width))


def _lines(line: Callable[[Sequence[str]], str], rows: Sequence[Sequence[str]], width: int) -> Iterator[str]:
    yield line(rows[0])
    yield "|" + "---|" * width
    for row in rows[1:]:
        yield line(row)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _decoded(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("gb18030", errors="replace")
