"""Real files of every kind an attachment may be, made by the libraries that write them, and the bad ones
each refusal is for."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

from docx import Document as WordDocument
from openpyxl import Workbook
from PIL import Image
from pypdf import PdfWriter


def image(fmt: str, size: tuple[int, int] = (32, 24)) -> bytes:
    """A small picture in Pillow's format ``fmt`` (PNG, JPEG, GIF, WEBP)."""
    buffer = io.BytesIO()
    Image.new("RGB", size, (200, 30, 30)).save(buffer, format=fmt)
    return buffer.getvalue()


def pixel_bomb(width: int = 20000, height: int = 20000) -> bytes:
    """A PNG of a hundred bytes whose header says 20,000 x 20,000 pixels (400 million): decoded, it would
    take more than a gigabyte."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\0" * 64))
        + chunk(b"IEND", b"")
    )


def pdf(*, password: str = "") -> bytes:
    writer = PdfWriter()
    writer.add_blank_page(width=200, height=200)
    if password:
        writer.encrypt(user_password=password, owner_password=password)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def docx(text: str = "The purchasing policy.") -> bytes:
    document = WordDocument()
    document.add_paragraph(text)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def xlsx() -> bytes:
    workbook = Workbook()
    sheet = workbook.active
    sheet.append(["supplier", "amount"])
    sheet.append(["ACME", 50000])
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def zip_bomb_docx() -> bytes:
    """A DOCX whose document part is 50 MB of zeros compressed a thousand times over."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as package:
        package.writestr("[Content_Types].xml", b"<Types/>")
        package.writestr("word/document.xml", b"\0" * (50 * 1024 * 1024))
    return buffer.getvalue()


def encrypted_office() -> bytes:
    """What Office writes for a password-protected DOCX: an OLE compound file, not a ZIP package."""
    return b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 4000


def truncated_png() -> bytes:
    """A PNG cut off in the middle of its image data: its signature and header are right."""
    whole = image("PNG", (64, 64))
    return whole[: len(whole) // 2]


PNG = image("PNG")
JPEG = image("JPEG")
GIF = image("GIF")
WEBP = image("WEBP")
PDF = pdf()
