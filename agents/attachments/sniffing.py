"""What an attached file really is, decided from its bytes. Django-free.

:func:`attachment_checked` answers with a typed outcome before anything is stored:

- :class:`Sniffed`: the file's kind (a document or an image), its format and the content type the platform
  serves it with (never the type the client claimed);
- :class:`Unfit`: a code and the figures behind it (:mod:`agents.attachments.refusals` words it in the
  user's language).

Images (PNG, JPEG, GIF, WebP) are recognised by Pillow (already a dependency of python-pptx; it reads each
format's signature, then the header with the picture's size, without decoding the pixels), so a picture
that would decode into more than ``max_pixels`` pixels (a decompression bomb) is refused before anything
decodes it. Documents go through the knowledge bases' own check
(:func:`agents.knowledge.formats.file_checked`: the extension must agree with the content, a ZIP bomb is
refused before it is opened, text must decode); a PDF is then opened far enough to know whether it is
encrypted or damaged, as the knowledge bases' parser would find out later.

A name's extension that names another format than the content is refused (``extension_mismatch``): a
``.png`` that is a JPEG, a ``.pdf`` that is a picture. A picture without an extension (a pasted
screenshot may come unnamed) is what its bytes say.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import PurePosixPath
from typing import BinaryIO

from agents.knowledge.formats import Accepted, DocumentFormat, FileLimits, RefusalCode, Refused, file_checked

__all__ = [
    "AttachmentKind",
    "FailureCode",
    "ImageFormat",
    "SniffLimits",
    "Sniffed",
    "Unfit",
    "attachment_checked",
]


class AttachmentKind(StrEnum):
    DOCUMENT = "document"
    IMAGE = "image"


class ImageFormat(StrEnum):
    PNG = "png"
    JPEG = "jpeg"
    GIF = "gif"
    WEBP = "webp"


class FailureCode(StrEnum):
    """Refusals of an attachment that the knowledge bases' format check does not make."""

    EMPTY = "empty"
    MALFORMED = "malformed"  # the same code as the knowledge parser's damaged file
    TOO_MANY_PIXELS = "too_many_pixels"  # an image that would decode into more pixels than allowed


@dataclass(frozen=True, slots=True)
class SniffLimits:
    max_bytes: int = 20 * 1024 * 1024
    max_unpacked: int = 200 * 1024 * 1024
    max_pixels: int = 8192 * 8192


@dataclass(frozen=True, slots=True)
class Sniffed:
    kind: AttachmentKind
    format: str
    content_type: str


@dataclass(frozen=True, slots=True)
class Unfit:
    """The file may not be attached: ``code`` is a :class:`~agents.knowledge.formats.RefusalCode` or a
    :class:`FailureCode`."""

    code: str
    figures: dict[str, int | str] = field(default_factory=dict)

    @classmethod
    def of(cls, refused: Refused) -> Unfit:
        return cls(refused.code.value, dict(refused.figures))


# Pillow's names of the formats taken; Image.open is told to try these only.
_PILLOW_FORMATS = {
    "PNG": ImageFormat.PNG,
    "JPEG": ImageFormat.JPEG,
    "GIF": ImageFormat.GIF,
    "WEBP": ImageFormat.WEBP,
}
_IMAGE_EXTENSIONS = {
    ".png": ImageFormat.PNG,
    ".jpg": ImageFormat.JPEG,
    ".jpeg": ImageFormat.JPEG,
    ".jfif": ImageFormat.JPEG,
    ".gif": ImageFormat.GIF,
    ".webp": ImageFormat.WEBP,
}
CONTENT_TYPES: dict[str, str] = {
    ImageFormat.PNG: "image/png",
    ImageFormat.JPEG: "image/jpeg",
    ImageFormat.GIF: "image/gif",
    ImageFormat.WEBP: "image/webp",
    DocumentFormat.PDF: "application/pdf",
    DocumentFormat.DOCX: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    DocumentFormat.XLSX: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    DocumentFormat.PPTX: "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    DocumentFormat.CSV: "text/csv",
    DocumentFormat.MARKDOWN: "text/markdown",
    DocumentFormat.HTML: "text/html",
    DocumentFormat.TEXT: "text/plain",
}


def attachment_checked(
    name: str, file: BinaryIO, size: int, limits: SniffLimits | None = None
) -> Sniffed | Unfit:
    """Whether the file called ``name`` (``size`` bytes, readable and seekable) may be attached, and as
    what. Leaves the file at its start."""
    limits = limits or SniffLimits()
    if size > limits.max_bytes:
        return Unfit(RefusalCode.TOO_LARGE, {"size": size, "limit": limits.max_bytes})
    if size == 0:
        return Unfit(FailureCode.EMPTY)
    extension = PurePosixPath(name.lower()).suffix
    try:
        image = _image_checked(file, limits)
        if image is not None:
            named = _IMAGE_EXTENSIONS.get(extension)
            if isinstance(image, Sniffed) and extension and named != image.format:
                return Unfit(
                    RefusalCode.EXTENSION_MISMATCH, {"named": extension.lstrip("."), "found": image.format}
                )
            return image
        if extension in _IMAGE_EXTENSIONS:
            return Unfit(RefusalCode.EXTENSION_MISMATCH, {"named": extension.lstrip("."), "found": "other"})
        checked = file_checked(
            name,
            file,
            size,
            FileLimits(max_bytes=limits.max_bytes, max_unpacked=limits.max_unpacked),
        )
        if isinstance(checked, Refused):
            return Unfit.of(checked)
        if checked.format is DocumentFormat.PDF:
            refused = _pdf_refused(file)
            if refused is not None:
                return refused
        return _document(checked)
    finally:
        file.seek(0)


def _document(accepted: Accepted) -> Sniffed:
    return Sniffed(AttachmentKind.DOCUMENT, accepted.format.value, CONTENT_TYPES[accepted.format])


def _image_checked(file: BinaryIO, limits: SniffLimits) -> Sniffed | Unfit | None:
    """The picture the bytes are, a refusal of a damaged or oversized one, or ``None``: not a picture."""
    from PIL import Image, UnidentifiedImageError

    file.seek(0)
    with warnings.catch_warnings():
        # Pillow's own bomb check warns (and raises past twice its limit); ours is the pixel count below.
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        try:
            with Image.open(file, formats=list(_PILLOW_FORMATS)) as picture:
                found = _PILLOW_FORMATS[str(picture.format)]
                width, height = picture.size
                if width * height > limits.max_pixels:
                    return Unfit(
                        FailureCode.TOO_MANY_PIXELS,
                        {"width": width, "height": height, "limit": limits.max_pixels},
                    )
                picture.verify()  # the structure (PNG: every chunk's checksum), without decoding pixels
        except UnidentifiedImageError:
            return None
        except Image.DecompressionBombError:
            return Unfit(FailureCode.TOO_MANY_PIXELS, {"limit": limits.max_pixels})
        except Exception as exc:  # a signature Pillow knows, then a damaged header or body
            return Unfit(FailureCode.MALFORMED, {"error": type(exc).__name__})
        finally:
            file.seek(0)
    return Sniffed(AttachmentKind.IMAGE, found.value, CONTENT_TYPES[found])


def _pdf_refused(file: BinaryIO) -> Unfit | None:
    """An encrypted PDF (one that needs a password to open) or a damaged one; ``None`` for a readable one."""
    from pypdf import PdfReader

    file.seek(0)
    try:
        reader = PdfReader(file)
        if reader.is_encrypted and not reader.decrypt(""):  # an owner password alone still reads
            return Unfit(RefusalCode.ENCRYPTED)
        if len(reader.pages) == 0:
            return Unfit(FailureCode.MALFORMED, {"error": "no pages"})
    except Exception as exc:  # pypdf's error on a damaged file, whatever its type
        return Unfit(FailureCode.MALFORMED, {"error": type(exc).__name__})
    finally:
        file.seek(0)
    return None
