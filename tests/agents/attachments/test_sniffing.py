"""An attachment is what its bytes say: pictures by their signature and header (never decoded to find out),
documents by the knowledge bases' own check; a name that says otherwise, a decompression or ZIP bomb, a
damaged or password-protected file, an empty one, each gets its own refusal, never a crash."""

from __future__ import annotations

import io

import pytest

from agents.attachments.sniffing import AttachmentKind, Sniffed, SniffLimits, Unfit, attachment_checked
from tests.agents.attachments import files


def check(name: str, data: bytes, limits: SniffLimits | None = None):
    return attachment_checked(name, io.BytesIO(data), len(data), limits)


@pytest.mark.parametrize(
    ("name", "data", "fmt", "content_type"),
    [
        ("screenshot.png", files.PNG, "png", "image/png"),
        ("photo.JPG", files.JPEG, "jpeg", "image/jpeg"),
        ("photo.jpeg", files.JPEG, "jpeg", "image/jpeg"),
        ("anim.gif", files.GIF, "gif", "image/gif"),
        ("pic.webp", files.WEBP, "webp", "image/webp"),
        ("image", files.PNG, "png", "image/png"),
    ],
    ids=["png", "jpg-upper-case", "jpeg", "gif", "webp", "pasted-without-extension"],
)
def test_a_picture_is_recognised_from_its_bytes(name, data, fmt, content_type):
    assert check(name, data) == Sniffed(AttachmentKind.IMAGE, fmt, content_type)


@pytest.mark.parametrize(
    ("name", "data", "fmt"),
    [
        ("contract.pdf", files.PDF, "pdf"),
        ("policy.docx", files.docx(), "docx"),
        ("amounts.xlsx", files.xlsx(), "xlsx"),
        ("suppliers.csv", "名称,国家\nACME,中国\n".encode(), "csv"),
        ("notes.md", b"# Notes\n\nText.", "markdown"),
        ("page.html", b"<html><body>Hi</body></html>", "html"),
        ("notes.txt", "采购政策".encode("gb18030"), "text"),
    ],
)
def test_a_document_is_the_format_its_content_and_its_name_agree_on(name, data, fmt):
    checked = check(name, data)
    assert isinstance(checked, Sniffed) and checked.kind == AttachmentKind.DOCUMENT and checked.format == fmt


def test_the_content_type_is_the_formats_never_the_clients():
    checked = check("page.html", b"<html><script>alert(1)</script></html>")
    assert isinstance(checked, Sniffed) and checked.content_type == "text/html"
    assert check("data.csv", b"a,b\n1,2\n").content_type == "text/csv"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("name", "data", "named", "found"),
    [
        ("photo.png", files.JPEG, "png", "jpeg"),
        ("report.pdf", files.PNG, "pdf", "png"),
        ("notes.txt", files.GIF, "txt", "gif"),
        ("picture.jpg", files.PDF, "jpg", "other"),
        ("sheet.docx", files.xlsx(), "docx", "xlsx"),
    ],
    ids=["jpeg-named-png", "png-named-pdf", "gif-named-txt", "pdf-named-jpg", "xlsx-named-docx"],
)
def test_an_extension_that_lies_is_refused(name, data, named, found):
    assert check(name, data) == Unfit("extension_mismatch", {"named": named, "found": found})


def test_an_unknown_extension_is_refused():
    assert check("setup.exe", b"MZ\x90\x00" + b"\0" * 100) == Unfit("unknown_format", {"extension": ".exe"})


def test_an_empty_file_is_refused():
    assert check("notes.txt", b"") == Unfit("empty")


def test_a_file_over_the_limit_is_refused_before_it_is_read():
    assert check("photo.png", files.PNG, SniffLimits(max_bytes=10)) == Unfit(
        "too_large", {"size": len(files.PNG), "limit": 10}
    )


@pytest.mark.parametrize(
    ("data", "limit"),
    [(files.pixel_bomb(), SniffLimits().max_pixels), (files.pixel_bomb(9000, 9000), 8192 * 8192)],
    ids=["past-pillows-own-bound", "past-the-platforms-bound"],
)
def test_a_decompression_bomb_picture_is_refused_before_anything_decodes_it(data, limit):
    checked = check("bomb.png", data)
    assert isinstance(checked, Unfit) and checked.code == "too_many_pixels"
    assert checked.figures["limit"] == limit


def test_a_damaged_picture_is_refused_as_malformed():
    checked = check("cut.png", files.truncated_png())
    assert isinstance(checked, Unfit) and checked.code == "malformed"


def test_a_password_protected_pdf_is_refused():
    assert check("secret.pdf", files.pdf(password="s3cret")) == Unfit("encrypted")


def test_a_pdf_that_only_restricts_editing_is_read():
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(width=100, height=100)
    writer.encrypt(user_password="", owner_password="owner")
    buffer = io.BytesIO()
    writer.write(buffer)
    checked = check("restricted.pdf", buffer.getvalue())
    assert isinstance(checked, Sniffed) and checked.format == "pdf"


def test_a_damaged_pdf_is_refused_as_malformed():
    checked = check("broken.pdf", b"%PDF-1.7\n1 0 obj << >> endobj\n%%EOF\n")
    assert isinstance(checked, Unfit) and checked.code == "malformed"


def test_a_password_protected_office_file_is_refused():
    assert check("secret.docx", files.encrypted_office()) == Unfit("encrypted")


def test_a_zip_bomb_is_refused_before_it_is_opened():
    checked = check("bomb.docx", files.zip_bomb_docx())
    assert isinstance(checked, Unfit) and checked.code == "compression_too_high"


def test_a_package_that_unpacks_past_the_limit_is_refused():
    checked = check("big.docx", files.docx(), SniffLimits(max_unpacked=1000))
    assert isinstance(checked, Unfit) and checked.code == "unpacks_too_large"


def test_text_in_neither_utf8_nor_gb18030_is_refused():
    assert check("notes.txt", b"\x00\x01binary\xff") == Unfit("not_text")


def test_the_check_leaves_the_file_at_its_start():
    stream = io.BytesIO(files.PDF)
    attachment_checked("contract.pdf", stream, len(files.PDF))
    assert stream.tell() == 0
