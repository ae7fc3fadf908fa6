"""A ``CallToolResult`` as what the model reads and what the chat's tool card shows.

Text blocks are joined; ``structuredContent`` is given as compact JSON (servers usually repeat it as a
text block, which is then not repeated); images, audio and binary resources become artifacts for the
tool card and a one-line description for the model (never their base64); a text resource is inlined
with its URI, a resource link named. Everything the model reads is capped at the connector's maximum
response size (``truncated`` says so).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from mcp import types

from agents.engine.tools import Artifact

MAX_ERROR_CHARS = 500
_EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}


@dataclass(frozen=True, slots=True)
class RenderedResult:
    """The model's text, the tool card's artifacts, the result's size and whether it was cut."""

    text: str
    artifacts: tuple[Artifact, ...] = ()
    size_bytes: int = 0
    truncated: bool = False
    is_error: bool = False


def _size(n: int) -> str:
    return f"{n} bytes" if n < 1024 else f"{n / 1024:.1f} kB"


def _decode(data: str) -> bytes | None:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def _binary(kind: str, mime: str, data: str, index: int, label: str = "") -> tuple[str, Artifact | None]:
    raw = _decode(data)
    if raw is None:
        return f"[{kind} ({mime}) that could not be decoded]", None
    name = label or f"{kind}-{index}.{_EXTENSIONS.get(mime, 'bin')}"
    return f"[{kind}: {name}, {mime}, {_size(len(raw))}; shown to the user in the tool card]", Artifact(
        name=name, mime_type=mime, content=raw
    )


def render_result(result: types.CallToolResult, *, max_bytes: int) -> RenderedResult:
    """The model's view and the card's artifacts of one tool result."""
    parts: list[str] = []
    artifacts: list[Artifact] = []
    structured = result.structured_content
    structured_text = (
        json.dumps(structured, ensure_ascii=False, separators=(",", ":"), default=str)
        if structured is not None
        else ""
    )
    for index, block in enumerate(result.content, start=1):
        if isinstance(block, types.TextContent):
            if structured is not None and _same_json(block.text, structured):
                continue
            parts.append(block.text)
        elif isinstance(block, types.ImageContent):
            line, artifact = _binary("image", block.mime_type, block.data, index)
            parts.append(line)
            artifacts.extend([artifact] if artifact else [])
        elif isinstance(block, types.AudioContent):
            line, artifact = _binary("audio", block.mime_type, block.data, index)
            parts.append(line)
            artifacts.extend([artifact] if artifact else [])
        elif isinstance(block, types.EmbeddedResource):
            resource = block.resource
            mime = resource.mime_type or "application/octet-stream"
            if isinstance(resource, types.TextResourceContents):
                parts.append(f"[resource {resource.uri}]\n{resource.text}")
            else:
                label = str(resource.uri).rstrip("/").rsplit("/", 1)[-1] or f"resource-{index}"
                line, artifact = _binary("resource", mime, resource.blob, index, label)
                parts.append(line)
                artifacts.extend([artifact] if artifact else [])
        elif isinstance(block, types.ResourceLink):
            parts.append(f"[resource link: {block.name} {block.uri}]")
    if structured_text:
        parts.insert(0, structured_text)
    text = "\n".join(p for p in parts if p)
    size = len(json.dumps(result.model_dump(mode="json", by_alias=True, exclude_none=True), default=str))
    encoded = text.encode("utf-8")
    truncated = len(encoded) > max_bytes
    if truncated:
        text = encoded[:max_bytes].decode("utf-8", errors="ignore") + (
            f"\n[truncated: the result was {_size(len(encoded))}, more than this connector's limit]"
        )
    return RenderedResult(
        text=text, artifacts=tuple(artifacts), size_bytes=size, truncated=truncated, is_error=result.is_error
    )


def _same_json(text: str, value: Any) -> bool:
    """Whether a text block only repeats the structured content (as JSON, or a wrapped scalar)."""
    if isinstance(value, dict) and list(value) == ["result"] and text == str(value["result"]):
        return True
    try:
        return bool(json.loads(text) == value)
    except ValueError:
        return False


def error_text(rendered: RenderedResult) -> str:
    """A tool error's message for the model and the call log (short)."""
    text = rendered.text.strip() or "the MCP tool reported an error"
    return text[:MAX_ERROR_CHARS]
