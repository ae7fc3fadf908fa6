"""An upload is what its content says, and a package is refused before it is opened when it would unpack
into more than a document ever holds: each bad file gets its own reason, never a crash."""

from __future__ import annotations

import io
import zipfile

import pytest

from agents.knowledge.formats import Accepted, DocumentFormat, FileLimits, RefusalCode, Refused, file_checked


def _package(*members: tuple[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as package:
        package.writestr("[Content_Types].xml", b"<Types/>")
        for name, data in members:
            package.writestr(name, data)
    return buffer.getvalue()


DOCX = _package(("word/document.xml", b"<w:document>" + b"<w:p>text</w:p>" * 20 + b"</w:document>"))
XLSX = _package(("xl/workbook.xml", b"<workbook/>"), ("xl/worksheets/sheet1.xml", b"<sheetData/>"))
PDF = b"%PDF-1.7\n1 0 obj << >> endobj\n%%EOF\n"


def _check(name: str, data: bytes, limits: FileLimits | None = None):
    return file_checked(name, io.BytesIO(data), len(data), limits)


@pytest.mark.parametrize(
    ("name", "data", "expected"),
    [
        ("policy.pdf", PDF, DocumentFormat.PDF),
        ("Policy.DOCX", DOCX, DocumentFormat.DOCX),
        ("limits.xlsx", XLSX, DocumentFormat.XLSX),
        ("suppliers.csv", "名称,国家\nACME,中国\n".encode(), DocumentFormat.CSV),
        ("readme.md", b"# Title\n\nText.", DocumentFormat.MARKDOWN),
        ("page.html", b"<html><body>Hi</body></html>", DocumentFormat.HTML),
        ("notes-gbk.txt", "采购政策：超过五万元需要审批。".encode("gb18030"), DocumentFormat.TEXT),
        ("notes-bom.txt", "\ufeffPolicy".encode(), DocumentFormat.TEXT),
    ],
    ids=["pdf", "docx-upper-case-name", "xlsx", "csv-utf8", "markdown", "html", "text-gb18030", "text-bom"],
)
def test_a_file_is_accepted_as_the_format_its_content_and_its_name_agree_on(name, data, expected):
    assert _check(name, data) == Accepted(expected)


@pytest.mark.parametrize(
    ("name", "data", "found"),
    [
        ("contract.pdf", DOCX, "zip"),
        ("contract.docx", PDF, "pdf"),
        ("sheet.docx", XLSX, "xlsx"),
        ("notes.txt", DOCX, "zip"),
        ("report.docx", _package(("content.xml", b"<odt/>")), "zip"),
    ],
    ids=["docx-named-pdf", "pdf-named-docx", "xlsx-named-docx", "docx-named-txt", "other-zip-named-docx"],
)
def test_a_file_whose_extension_lies_about_its_content_is_refused_saying_what_it_is(name, data, found):
    refused = _check(name, data)

    assert isinstance(refused, Refused) and refused.code is RefusalCode.EXTENSION_MISMATCH
    assert refused.figures["found"] == found


def test_a_zip_bomb_disguised_as_a_docx_is_refused_before_it_is_unpacked():
    bomb = _package(("word/document.xml", b"\0" * (20 * 1024 * 1024)))
    assert len(bomb) < 100 * 1024  # 20 MiB of zeros deflate to a few KiB

    refused = _check("innocent.docx", bomb)

    assert refused == Refused(RefusalCode.COMPRESSION_TOO_HIGH, {"member": "word/document.xml", "limit": 100})


def test_a_package_that_unpacks_past_the_limit_or_holds_too_many_files_is_refused():
    many = _package(
        *[(f"xl/worksheets/sheet{n}.xml", b"<sheetData/>") for n in range(30)], ("xl/workbook.xml", b"<w/>")
    )
    stored = _package(("word/document.xml", b"x" * 4096), compression=zipfile.ZIP_STORED)

    too_many = _check("many.xlsx", many, FileLimits(max_members=10))
    too_big = _check("big.docx", stored, FileLimits(max_unpacked=1024))

    assert isinstance(too_many, Refused) and too_many.code is RefusalCode.TOO_MANY_MEMBERS
    assert isinstance(too_big, Refused) and too_big.code is RefusalCode.UNPACKS_TOO_LARGE


@pytest.mark.parametrize(
    ("name", "data", "code"),
    [
        ("locked.docx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 512, RefusalCode.ENCRYPTED),
        ("broken.xlsx", b"PK\x03\x04" + b"\xff" * 200, RefusalCode.UNREADABLE_PACKAGE),
        ("binary.txt", bytes(range(256)) * 4, RefusalCode.NOT_TEXT),
        ("slides.key", b"anything", RefusalCode.UNKNOWN_FORMAT),
    ],
    ids=["password-protected-office-file", "broken-zip", "binary-named-txt", "unknown-extension"],
)
def test_each_kind_of_unreadable_file_is_refused_with_its_own_reason(name, data, code):
    refused = _check(name, data)

    assert isinstance(refused, Refused) and refused.code is code


def test_a_file_over_the_size_limit_is_refused_without_being_read():
    class Unread(io.BytesIO):
        def read(self, *args):  # noqa: ANN002 - a file the check must not read
            raise AssertionError("read")

    refused = file_checked("big.pdf", Unread(), 60 * 1024 * 1024)

    assert refused == Refused(RefusalCode.TOO_LARGE, {"size": 60 * 1024 * 1024, "limit": 50 * 1024 * 1024})


def test_the_check_leaves_the_file_at_its_start_for_the_parser():
    file = io.BytesIO(DOCX)
    file.seek(17)

    file_checked("policy.docx", file, len(DOCX))

    assert file.tell() == 0
