"""Keep the built site within the platform's Content-Security-Policy (``script-src 'self'``, no eval).

Sphinx's ``doctools.js`` turns a translation catalogue's plural rule into code with ``new Function``,
which the policy refuses (and the Chinese build loads a catalogue on every page). After the build this
replaces that one statement with a rule read without evaluating code: Chinese has one plural form
(``plural_expr`` ``0``); any other catalogue gets English's two. If a Sphinx release changes the statement,
the build fails here rather than shipping a page the policy breaks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sphinx.errors import ExtensionError

EVAL = """Documentation.PLURAL_EXPR = new Function(
      "n",
      `return (${catalog.plural_expr})`,
    );"""
NO_EVAL = """Documentation.PLURAL_EXPR = String(catalog.plural_expr).trim() === "0"
      ? () => 0
      : (n) => (n === 1 ? 0 : 1);"""


def _patch_doctools(app: Any, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    script = Path(app.outdir) / "_static" / "doctools.js"
    text = script.read_text(encoding="utf-8")
    if NO_EVAL in text:
        return
    if EVAL not in text:
        raise ExtensionError(f"{script}: Sphinx's plural rule changed; update docs/_ext/csp_safe.py")
    script.write_text(text.replace(EVAL, NO_EVAL), encoding="utf-8")


def setup(app: Any) -> dict[str, Any]:
    app.connect("build-finished", _patch_doctools)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
