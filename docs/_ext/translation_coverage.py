"""Say which paragraphs of the Chinese getting started and admin guide are still English.

The Chinese build shows a page's English text wherever its catalogue has no translation (a paragraph added
or changed since it was translated). After the build this lists those paragraphs, so whoever changed the
English knows what to translate; it never fails the build, as the English text is still right. Code,
names and cells without an English phrase are not counted.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from docutils import nodes

TRANSLATED_PARTS = ("index", "getting-started/", "admin-guide/")
ENGLISH_PHRASE = re.compile(r"\b[a-z]{2,}\s+[a-z]{2,}\b")


def _english_text(node: nodes.Element) -> str:
    return "".join(
        child.astext() for child in node.children if not isinstance(child, nodes.literal | nodes.reference)
    )


def _collect(app: Any, doctree: nodes.document, docname: str) -> None:
    if not str(app.config.language).startswith("zh") or not docname.startswith(TRANSLATED_PARTS):
        return
    found = app.env.__dict__.setdefault("untranslated_paragraphs", [])
    for node in doctree.findall(lambda n: isinstance(n, nodes.paragraph | nodes.title)):
        if node.get("translated") or isinstance(node.parent, nodes.caption | nodes.figure):
            continue
        if ENGLISH_PHRASE.search(_english_text(node)):
            found.append(f"{docname}: {node.astext()[:70]}")


def _report(app: Any, exception: Exception | None) -> None:
    found = app.env.__dict__.get("untranslated_paragraphs", [])
    if exception is None and found:
        print(f"note: {len(found)} paragraphs of the Chinese pages are still English:", file=sys.stderr)
        for line in found:
            print(f"  {line}", file=sys.stderr)


def setup(app: Any) -> dict[str, Any]:
    app.connect("doctree-resolved", _collect)
    app.connect("build-finished", _report)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
