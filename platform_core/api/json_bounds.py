"""Bounds on JSON that a client sends, checked before a decoder sees it.

Python's decoder recurses once per level of nesting: a body of a few thousand ``[`` raises
``RecursionError`` inside it (a 500 where a 400 was due), and a value nested a few hundred levels deep
that does decode still exhausts the recursion of whatever walks it later. :func:`json_nesting_exceeds`
counts the nesting without recursing, so every JSON entry point (the REST API's parser, the Feishu
callback, the MCP endpoint) refuses such a document before decoding it.
"""

from __future__ import annotations

import re

# Deeper than any document the platform takes (OpenAPI documents, tool arguments, approval conditions);
# far below the decoder's recursion limit. Stored values are cut at 64 levels anyway.
MAX_JSON_DEPTH = 100

# A JSON string, escapes included (the unrolled form, which does not backtrack).
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


def json_nesting_exceeds(text: str | bytes, max_depth: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``text`` opens more than ``max_depth`` arrays or objects inside each other.

    Brackets inside strings do not count. ``text`` need not be valid JSON: the decoder judges that after.
    Bytes are read as UTF-8, in which no multi-byte character contains a bracket or a quote.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if text.count("[") + text.count("{") <= max_depth:
        return False
    depth = 0
    for match in _BRACKET.finditer(_STRING.sub("", text)):
        if match[0] in "[{":
            depth += 1
            if depth > max_depth:
                return True
        else:
            depth -= 1
    return False
