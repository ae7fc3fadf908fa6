"""Documents made on the spot for the knowledge base tests and benchmarks: a PDF written by hand (text
in Helvetica, ASCII) and a DOCX written with python-docx."""

from __future__ import annotations

import io
from collections.abc import Sequence


def pdf_with_pages(pages: Sequence[str]) -> bytes:
    """A PDF whose pages show ``pages`` (ASCII text, a line of the page for each line of the text), with a
    correct cross-reference table."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>", ""]
    kids = []
    for text in pages:
        lines = [_pdf_string(line) for line in text.split("\n")]
        stream = "BT /F1 10 Tf 12 TL 72 740 Td " + " T* ".join(f"({line}) Tj" for line in lines) + " ET"
        page_number = len(objects) + 1
        kids.append(f"{page_number} 0 R")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {page_number + 1} 0 R "
            "/Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>"
        )
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>"
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{offset:010d} 00000 n \n" for offset in offsets).encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def docx_with_sections(sections: Sequence[tuple[str, Sequence[str]]]) -> bytes:
    """A DOCX of ``(heading, paragraphs)`` sections, each heading at level 2."""
    from docx import Document

    document = Document()
    for heading, paragraphs in sections:
        document.add_heading(heading, level=2)
        for paragraph in paragraphs:
            document.add_paragraph(paragraph)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _pdf_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
