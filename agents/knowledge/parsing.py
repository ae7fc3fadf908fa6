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

The outcome is typed: :class:`Parsed` with the pages, or :class:`ParseFailed` with a :class:`FailureCode`
(an encrypted or malformed file, more pages or rows than allowed, no text at all: a scanned PDF) that the
admin shows translated. A library's error on a malformed file ends here as ``MALFORMED`` (naming the
error's type), never in the worker.
"""

from __future__ import annotations

import csv
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


@dataclass(frozen=True, slots=True)
class Parsed:
    pages: tuple[str, ...]

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


def document_parsed(fmt: DocumentFormat, file: BinaryIO, limits: ParseLimits | None = None) -> ParseOutcome:
    """The Markdown pages of ``file``, read as ``fmt``."""
    limits = limits or ParseLimits()
    try:
        pages = tuple(page.strip() for page in _READERS[fmt](file, limits))
    except _Failed as failed:
        return failed.failure
    except Exception as exc:  # a library refusing a malformed file, whatever its error type
        return ParseFailed(FailureCode.MALFORMED, {"error": type(exc).__name__})
    if not any(pages):
        return ParseFailed(FailureCode.NO_TEXT)
    return Parsed(pages)


def _pdf(file: BinaryIO, limits: ParseLimits) -> list[str]:
    from pypdf import PdfReader

    reader = PdfReader(file)
    if reader.is_encrypted and not reader.decrypt(""):  # an owner password alone still reads
        raise _Failed(ParseFailed(FailureCode.ENCRYPTED))
    _count(len(reader.pages), limits)
    return [page.extract_text() or "" for page in reader.pages]


def _docx(file: BinaryIO, limits: ParseLimits) -> list[str]:
    from docx import Document
    from docx.table import Table

    blocks: list[str] = []
    for item in Document(file).iter_inner_content():
        if isinstance(item, Table):
            blocks.append(_table([[cell.text for cell in row.cells] for row in item.rows]))
            continue
        text = item.text.strip()
        if not text:
            continue
        style = item.style.name if item.style is not None else ""
        if style == "Title":
            blocks.append(f"# {text}")
        elif style.startswith("Heading ") and style[8:].isdigit():
            blocks.append(f"{'#' * min(int(style[8:]), 6)} {text}")
        elif "List" in style:
            blocks.append(f"- {text}")
        else:
            blocks.append(text)
    return ["\n\n".join(blocks)]


def _xlsx(file: BinaryIO, limits: ParseLimits) -> list[str]:
    from openpyxl import load_workbook

    workbook = load_workbook(file, read_only=True, data_only=True)
    try:
        _count(len(workbook.worksheets), limits)
        pages = []
        for sheet in workbook.worksheets:
            rows = _bounded(sheet.iter_rows(values_only=True), limits)
            pages.append(f"## {sheet.title}\n\n{_table(rows)}" if rows else "")
        return pages
    finally:
        workbook.close()


def _pptx(file: BinaryIO, limits: ParseLimits) -> list[str]:
    from pptx import Presentation

    slides = Presentation(file).slides
    _count(len(slides), limits)
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
    return pages


def _csv(file: BinaryIO, limits: ParseLimits) -> list[str]:
    rows = _bounded(csv.reader(io.StringIO(_decoded(file.read()))), limits)
    return [_table(rows)]


def _html(file: BinaryIO, limits: ParseLimits) -> list[str]:
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(_decoded(file.read()), "html.parser")
    for hidden in soup(["script", "style", "noscript", "template", "head"]):
        hidden.decompose()  # what a browser does not show is not the document's text
    return [MarkdownConverter(heading_style="ATX").convert_soup(soup)]


def _text(file: BinaryIO, limits: ParseLimits) -> list[str]:
    return [_decoded(file.read())]


_READERS: dict[DocumentFormat, Callable[[BinaryIO, ParseLimits], list[str]]] = {
    DocumentFormat.PDF: _pdf,
    DocumentFormat.DOCX: _docx,
    DocumentFormat.XLSX: _xlsx,
    DocumentFormat.PPTX: _pptx,
    DocumentFormat.CSV: _csv,
    DocumentFormat.HTML: _html,
    DocumentFormat.MARKDOWN: _text,
    DocumentFormat.TEXT: _text,
}


def _count(pages: int, limits: ParseLimits) -> None:
    if pages > limits.max_pages:
        raise _Failed(ParseFailed(FailureCode.TOO_MANY_PAGES, {"pages": pages, "limit": limits.max_pages}))


def _bounded(rows: Iterable[Sequence[Any]], limits: ParseLimits) -> list[list[str]]:
    kept: list[list[str]] = []
    for row in rows:
        cells = ["" if value is None else str(value) for value in row]
        if not any(cell.strip() for cell in cells):
            continue
        if len(kept) == limits.max_rows:
            raise _Failed(ParseFailed(FailureCode.TOO_MANY_ROWS, {"limit": limits.max_rows}))
        kept.append(cells)
    return kept


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
