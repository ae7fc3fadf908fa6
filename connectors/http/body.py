"""Read a response body up to a size cap and render it as text the LLM can read."""

from __future__ import annotations

import json

import httpx

_TEXT_TYPES = ("json", "xml", "javascript", "x-www-form-urlencoded", "yaml", "csv", "html")


async def read_capped(response: httpx.Response, cap: int) -> tuple[bytes, bool]:
    """Up to ``cap`` decoded body bytes and whether more were left unread (the rest is never read)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        if size + len(chunk) > cap:
            chunks.append(chunk[: cap - size])
            return b"".join(chunks), True
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), False


def _is_text(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return not media or media.startswith("text/") or any(t in media for t in _TEXT_TYPES)


def render_body(body: bytes, *, content_type: str, charset: str | None, truncated: bool, cap: int) -> str:
    """JSON as compact JSON, text as text, binary as a one-line note; a marker when cut at the cap."""
    if not body:
        return ""
    if not _is_text(content_type):
        more = " or more" if truncated else ""
        return f"[{len(body)}{more} bytes of {content_type.split(';', 1)[0] or 'binary data'}; not shown]"
    try:
        text = body.decode(charset or "utf-8", errors="replace")
    except LookupError:  # an unknown charset name in Content-Type
        text = body.decode("utf-8", errors="replace")
    if "json" in content_type.lower() and not truncated:
        try:
            text = json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))
        except ValueError:
            pass
    if truncated:
        text += f"\n[truncated: the response is larger than {cap} bytes]"
    return text


def excerpt(text: str, limit: int = 300) -> str:
    """One line of at most ``limit`` characters, for error messages."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
