"""What an uploaded file really is, and whether it is safe to open. Django-free, standard library only.

Before any parser sees a file, :func:`file_checked` reads its first bytes and, for the formats that are
ZIP packages (DOCX, XLSX, PPTX), its table of contents, and answers with a typed outcome:

- :class:`Accepted`: the file's :class:`DocumentFormat`, taken from its *content*; the name's extension
  must agree with it (a ``.pdf`` that is a ZIP, or a ``.docx`` that is a spreadsheet, is refused);
- :class:`Refused`: a :class:`RefusalCode` and the figures behind it, which the admin shows translated
  (this module knows no language).

A package is refused before it is opened when it would decompress to more than ``max_unpacked`` bytes
in all, when one member is compressed more than ``max_ratio`` times (a ZIP bomb), or when it holds more
than ``max_members`` files. Text formats (Markdown, HTML, plain text, CSV) must decode as UTF-8 (with or
without a byte-order mark) or GB18030, the encodings of the platform's users' documents.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import PurePosixPath
from typing import BinaryIO

__all__ = [
    "Accepted",
    "DocumentFormat",
    "FileLimits",
    "Refused",
    "RefusalCode",
    "file_checked",
]


class DocumentFormat(StrEnum):
    PDF = "pdf"
    DOCX = "docx"
    XLSX = "xlsx"
    PPTX = "pptx"
    CSV = "csv"
    MARKDOWN = "markdown"
    HTML = "html"
    TEXT = "text"


class RefusalCode(StrEnum):
    TOO_LARGE = "too_large"  # the file itself is over the size limit
    UNKNOWN_FORMAT = "unknown_format"  # the extension names no format the platform reads
    EXTENSION_MISMATCH = "extension_mismatch"  # the content is not what the extension says
    UNREADABLE_PACKAGE = "unreadable_package"  # a DOCX/XLSX/PPTX whose ZIP structure is broken
    UNPACKS_TOO_LARGE = "unpacks_too_large"  # a package that decompresses past the limit
    COMPRESSION_TOO_HIGH = "compression_too_high"  # a member compressed beyond any real document (a bomb)
    TOO_MANY_MEMBERS = "too_many_members"
    ENCRYPTED = "encrypted"  # a password-protected package (Office encrypts into an OLE file)
    NOT_TEXT = "not_text"  # a text format that decodes neither as UTF-8 nor as GB18030


@dataclass(frozen=True, slots=True)
class FileLimits:
    max_bytes: int = 50 * 1024 * 1024
    max_unpacked: int = 200 * 1024 * 1024
    max_ratio: int = 100
    max_members: int = 5000


@dataclass(frozen=True, slots=True)
class Accepted:
    format: DocumentFormat


@dataclass(frozen=True, slots=True)
class Refused:
    code: RefusalCode
    figures: dict[str, int | str] = field(default_factory=dict)


FileCheck = Accepted | Refused

_EXTENSIONS = {
    ".pdf": DocumentFormat.PDF,
    ".docx": DocumentFormat.DOCX,
    ".xlsx": DocumentFormat.XLSX,
    ".pptx": DocumentFormat.PPTX,
    ".csv": DocumentFormat.CSV,
    ".md": DocumentFormat.MARKDOWN,
    ".markdown": DocumentFormat.MARKDOWN,
    ".html": DocumentFormat.HTML,
    ".htm": DocumentFormat.HTML,
    ".txt": DocumentFormat.TEXT,
}
# The part every package of the format has (Office Open XML, ECMA-376).
_PACKAGE_PARTS = {
    DocumentFormat.DOCX: "word/document.xml",
    DocumentFormat.XLSX: "xl/workbook.xml",
    DocumentFormat.PPTX: "ppt/presentation.xml",
}
_ZIP_MAGIC = b"PK\x03\x04"
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # what Office writes for a password-protected file
_PDF_MAGIC = b"%PDF-"
_TEXT_PROBE = 64 * 1024


def file_checked(name: str, file: BinaryIO, size: int, limits: FileLimits | None = None) -> FileCheck:
    """Whether the file called ``name`` (``size`` bytes, readable and seekable) may be parsed, and as
    what. Reads its head and, for a package, its table of contents; leaves the file at its start."""
    limits = limits or FileLimits()
    if size > limits.max_bytes:
        return Refused(RefusalCode.TOO_LARGE, {"size": size, "limit": limits.max_bytes})
    named = _EXTENSIONS.get(PurePosixPath(name.lower()).suffix)
    if named is None:
        return Refused(RefusalCode.UNKNOWN_FORMAT, {"extension": PurePosixPath(name).suffix})
    file.seek(0)
    head = file.read(_TEXT_PROBE)
    file.seek(0)
    try:
        if named is DocumentFormat.PDF:
            return Accepted(named) if head.startswith(_PDF_MAGIC) else _mismatch(named, head)
        if named in _PACKAGE_PARTS:
            return _package_checked(named, file, head, limits)
        if head.startswith((_ZIP_MAGIC, _PDF_MAGIC, _OLE_MAGIC)):
            return _mismatch(named, head)
        return Accepted(named) if _decodes(head) else Refused(RefusalCode.NOT_TEXT)
    finally:
        file.seek(0)


def _package_checked(named: DocumentFormat, file: BinaryIO, head: bytes, limits: FileLimits) -> FileCheck:
    if head.startswith(_OLE_MAGIC):
        return Refused(RefusalCode.ENCRYPTED)
    if not head.startswith(_ZIP_MAGIC):
        return _mismatch(named, head)
    try:
        with zipfile.ZipFile(file) as package:
            members = package.infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return Refused(RefusalCode.UNREADABLE_PACKAGE)
    if len(members) > limits.max_members:
        return Refused(RefusalCode.TOO_MANY_MEMBERS, {"members": len(members), "limit": limits.max_members})
    unpacked = sum(member.file_size for member in members)
    if unpacked > limits.max_unpacked:
        return Refused(RefusalCode.UNPACKS_TOO_LARGE, {"unpacked": unpacked, "limit": limits.max_unpacked})
    for member in members:
        if member.file_size > limits.max_ratio * max(member.compress_size, 1):
            return Refused(
                RefusalCode.COMPRESSION_TOO_HIGH, {"member": member.filename, "limit": limits.max_ratio}
            )
    names = {member.filename for member in members}
    if _PACKAGE_PARTS[named] not in names:
        found = next((fmt for fmt, part in _PACKAGE_PARTS.items() if part in names), None)
        return Refused(
            RefusalCode.EXTENSION_MISMATCH, {"named": named.value, "found": found.value if found else "zip"}
        )
    return Accepted(named)


def _mismatch(named: DocumentFormat, head: bytes) -> Refused:
    found = "pdf" if head.startswith(_PDF_MAGIC) else "zip" if head.startswith(_ZIP_MAGIC) else "other"
    return Refused(RefusalCode.EXTENSION_MISMATCH, {"named": named.value, "found": found})


def _decodes(head: bytes) -> bool:
    if b"\x00" in head:
        return False
    for encoding in ("utf-8-sig", "gb18030"):
        try:
            head.decode(encoding)
        except UnicodeDecodeError as exc:
            if exc.start >= len(head) - 4:  # the probe cut a multi-byte character at its end
                return True
            continue
        return True
    return False
