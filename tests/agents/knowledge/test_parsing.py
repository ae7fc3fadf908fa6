"""Each format a knowledge base takes is read into Markdown pages that keep its structure (headings,
lists, tables; a page per PDF page, slide or sheet), and each unreadable file ends failed with its reason.
The files are made here with the same libraries' writers (and, for PDF, by hand: tests/fakes/documents.py)."""

from __future__ import annotations

import io

import pytest

from agents.knowledge.chunking import chunk_pages
from agents.knowledge.formats import DocumentFormat
from agents.knowledge.parsing import FailureCode, Parsed, ParseFailed, ParseLimits, document_parsed
from tests.fakes.documents import pdf_with_pages


def _pdf(*pages: str) -> bytes:
    return pdf_with_pages(pages)


def _parsed(fmt: DocumentFormat, data: bytes, limits: ParseLimits | None = None):
    return document_parsed(fmt, io.BytesIO(data), limits)


def test_a_pdf_becomes_one_markdown_page_per_page_with_its_text():
    parsed = _parsed(
        DocumentFormat.PDF, _pdf("Payments over 50,000 CNY need approval.", "Suppliers are checked.")
    )

    assert isinstance(parsed, Parsed) and parsed.page_count == 2
    assert "Payments over 50,000 CNY need approval." in parsed.pages[0]
    assert "Suppliers are checked." in parsed.pages[1]


def test_a_docx_keeps_its_headings_lists_and_tables_in_order_chinese_included():
    from docx import Document

    document = Document()
    document.add_heading("采购政策", level=1)
    document.add_paragraph("超过五万元的付款需要财务审批。")
    document.add_heading("Suppliers", level=2)
    document.add_paragraph("Check the tax number", style="List Bullet")
    table = document.add_table(rows=2, cols=2)
    for row, values in zip(table.rows, [("Amount", "Approver"), ("> 50,000 | CNY", "finance")], strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    buffer = io.BytesIO()
    document.save(buffer)

    parsed = _parsed(DocumentFormat.DOCX, buffer.getvalue())

    assert isinstance(parsed, Parsed)
    assert parsed.pages == (
        "# 采购政策\n\n超过五万元的付款需要财务审批。\n\n## Suppliers\n\n- Check the tax number\n\n"
        "| Amount | Approver |\n|---|---|\n| > 50,000 \\| CNY | finance |",
    )
    [first, second] = chunk_pages(parsed.pages)
    assert first.heading_path == ("采购政策",) and second.heading_path == ("采购政策", "Suppliers")


def test_an_xlsx_becomes_one_table_per_sheet_headed_by_its_first_row():
    from openpyxl import Workbook

    workbook = Workbook()
    limits = workbook.active
    limits.title = "Limits"
    limits.append(["Amount", "Approver"])
    limits.append([50000, "finance"])
    suppliers = workbook.create_sheet("供应商")
    suppliers.append(["名称", "国家"])
    suppliers.append([None, None])
    suppliers.append(["ACME", "中国"])
    buffer = io.BytesIO()
    workbook.save(buffer)

    parsed = _parsed(DocumentFormat.XLSX, buffer.getvalue())

    assert isinstance(parsed, Parsed)
    assert parsed.pages == (
        "## Limits\n\n| Amount | Approver |\n|---|---|\n| 50000 | finance |",
        "## 供应商\n\n| 名称 | 国家 |\n|---|---|\n| ACME | 中国 |",
    )


def test_a_pptx_becomes_one_page_per_slide_with_its_title_as_heading():
    from pptx import Presentation
    from pptx.util import Inches

    presentation = Presentation()
    first = presentation.slides.add_slide(presentation.slide_layouts[1])
    first.shapes.title.text = "Approvals"
    first.placeholders[1].text = "Large payments wait for finance."
    second = presentation.slides.add_slide(presentation.slide_layouts[5])
    second.shapes.title.text = "Limits"
    table = second.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    for (row, col), value in {
        (0, 0): "Amount",
        (0, 1): "Approver",
        (1, 0): "50000",
        (1, 1): "finance",
    }.items():
        table.cell(row, col).text = value
    buffer = io.BytesIO()
    presentation.save(buffer)

    parsed = _parsed(DocumentFormat.PPTX, buffer.getvalue())

    assert isinstance(parsed, Parsed)
    assert parsed.pages == (
        "## Approvals\n\nLarge payments wait for finance.",
        "## Limits\n\n| Amount | Approver |\n|---|---|\n| 50000 | finance |",
    )


def test_csv_html_markdown_and_text_are_read_in_their_encoding():
    csv_parsed = _parsed(DocumentFormat.CSV, "名称,国家\nACME,中国\n".encode("gb18030"))
    html = _parsed(DocumentFormat.HTML, b"<h1>Policy</h1><script>x()</script><ul><li>One</li></ul>")
    text = _parsed(DocumentFormat.TEXT, "\ufeff采购政策".encode())

    assert csv_parsed == Parsed(("| 名称 | 国家 |\n|---|---|\n| ACME | 中国 |",))
    assert isinstance(html, Parsed) and html.pages[0].startswith("# Policy") and "x()" not in html.pages[0]
    assert "* One" in html.pages[0] or "- One" in html.pages[0]
    assert text == Parsed(("采购政策",))


def test_an_encrypted_pdf_fails_as_encrypted():
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    writer.append(PdfReader(io.BytesIO(_pdf("Secret terms."))))
    writer.encrypt(user_password="open sesame", owner_password="owner")
    buffer = io.BytesIO()
    writer.write(buffer)

    assert _parsed(DocumentFormat.PDF, buffer.getvalue()) == ParseFailed(FailureCode.ENCRYPTED)


@pytest.mark.parametrize(
    ("fmt", "data"),
    [
        (DocumentFormat.PDF, b"%PDF-1.7\n" + b"garbage " * 50),
        (DocumentFormat.DOCX, b"PK\x03\x04 not really a package"),
        (DocumentFormat.XLSX, b"PK\x03\x04 not really a package"),
        (DocumentFormat.PPTX, b"PK\x03\x04 not really a package"),
    ],
    ids=["pdf", "docx", "xlsx", "pptx"],
)
def test_a_malformed_file_fails_as_malformed_naming_the_error_and_raises_nothing(fmt, data):
    failed = _parsed(fmt, data)

    assert isinstance(failed, ParseFailed) and failed.code is FailureCode.MALFORMED
    assert failed.figures["error"]


def test_a_pdf_without_a_text_layer_fails_as_having_no_text():
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(width=612, height=792)  # what a scanned page without OCR gives the reader
    buffer = io.BytesIO()
    writer.write(buffer)

    assert _parsed(DocumentFormat.PDF, buffer.getvalue()) == ParseFailed(FailureCode.NO_TEXT)


def test_more_pages_or_rows_than_allowed_fail_with_the_limit():
    pages = _parsed(DocumentFormat.PDF, _pdf("one", "two", "three"), ParseLimits(max_pages=2))
    rows = _parsed(DocumentFormat.CSV, b"a\n1\n2\n3\n", ParseLimits(max_rows=3))

    assert pages == ParseFailed(FailureCode.TOO_MANY_PAGES, {"pages": 3, "limit": 2})
    assert rows == ParseFailed(FailureCode.TOO_MANY_ROWS, {"limit": 3})


def test_with_a_character_limit_reading_stops_once_that_much_text_is_made():
    csv_rows = b"item,price\n" + b"".join(b"part %d,%d\n" % (n, n) for n in range(1000))
    pages = _pdf("first page " * 20, "second page " * 20, "third page", "fourth page")

    sheet = _parsed(DocumentFormat.CSV, csv_rows, ParseLimits(max_rows=100, max_characters=300))
    pdf = _parsed(DocumentFormat.PDF, pages, ParseLimits(max_pages=3, max_characters=300))
    whole = _parsed(DocumentFormat.PDF, _pdf("one", "two"), ParseLimits(max_characters=300))

    # read up to the row or page that passes the limit, and the file's other limits no longer refuse it
    assert isinstance(sheet, Parsed) and not sheet.complete
    assert sheet.pages[0].splitlines()[-1] == "| part 20 | 20 |"  # the row that passes it
    assert isinstance(pdf, Parsed) and not pdf.complete and pdf.page_count == 2
    assert isinstance(whole, Parsed) and whole.complete and whole.page_count == 2


def test_a_spreadsheet_date_without_a_time_of_day_reads_as_the_date():
    import datetime

    from openpyxl import Workbook

    workbook = Workbook()
    workbook.active.append(["Ordered", "Delivered"])
    workbook.active.append([datetime.datetime(2024, 3, 24), datetime.datetime(2024, 3, 25, 14, 30)])
    buffer = io.BytesIO()
    workbook.save(buffer)

    parsed = _parsed(DocumentFormat.XLSX, buffer.getvalue())

    assert isinstance(parsed, Parsed)
    assert parsed.pages[0].endswith("| 2024-03-24 | 2024-03-25 14:30:00 |")
