"""Images a user attached to a message, as the model reads them. Django-free.

The conversation's messages, the run's transcript and its checkpoints hold an attached image as a
reference, an ``image_url`` content part whose URL is ``attachment:<id>`` (:func:`image_reference`), never
as its bytes: a checkpoint stays small however many screenshots a conversation holds, and the image stays
in the file storage. :class:`AttachedLLM`, the innermost wrapper of a run's model, turns each reference
into what the endpoint reads just before a request goes out: a ``data:`` URL of the image (base64) for an
endpoint with the ``vision`` ability, else a text note saying the model cannot see it (the entry points
refuse an image for such an agent before a run starts; the note covers a fallback endpoint without
vision). The budgets and the token estimates see the reference (a fixed count per image, see
:mod:`agents.engine.tokens`), not the base64 text.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agents.engine.llm import LLM, ChatResponse, LLMWrapper, Message, Usage

__all__ = [
    "ATTACHMENT_SCHEME",
    "AttachedLLM",
    "AttachmentData",
    "AttachmentReader",
    "attachment_id_of",
    "has_attachment_references",
    "image_reference",
    "question_attachments",
    "question_content",
]

ATTACHMENT_SCHEME = "attachment:"


@dataclass(frozen=True, slots=True)
class AttachmentData:
    """An attachment's bytes and what they are (the type decided from the bytes at upload)."""

    name: str
    media_type: str
    data: bytes


class AttachmentReader(Protocol):
    """Reads an attachment of the run's conversation by its id; ``None`` when it is gone (deleted)."""

    async def __call__(self, attachment_id: str) -> AttachmentData | None: ...


def image_reference(attachment_id: str, name: str) -> dict[str, Any]:
    """The content part that stands for an attached image (``name`` is kept for the note a model
    without vision reads; the part sent is made anew)."""
    return {"type": "image_url", "image_url": {"url": f"{ATTACHMENT_SCHEME}{attachment_id}"}, "name": name}


def attachment_id_of(part: Any) -> str | None:
    """The attachment id a content part refers to, else ``None``."""
    if not isinstance(part, Mapping) or part.get("type") != "image_url":
        return None
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, Mapping) else None
    if isinstance(url, str) and url.startswith(ATTACHMENT_SCHEME):
        return url.removeprefix(ATTACHMENT_SCHEME)
    return None


def question_content(query: str, attachments: Sequence[Mapping[str, Any]]) -> str | list[Any]:
    """The content of the question's message: its text, then the parts attached to it (the text alone
    when nothing is attached)."""
    if not attachments:
        return query
    return [{"type": "text", "text": query}, *(dict(part) for part in attachments)]


def question_attachments(messages: Sequence[Message]) -> list[Any]:
    """The parts attached to the run's question (its message marked ``_query``), after its text."""
    for message in messages:
        content = message.get("content")
        if message.get("_query") and isinstance(content, list):
            return list(content[1:])
    return []


def has_attachment_references(messages: Sequence[Message]) -> bool:
    """Whether any message holds an attachment reference."""
    return any(_referring(message) for message in messages)


def _referring(message: Message) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(attachment_id_of(part) is not None for part in content)


class AttachedLLM(LLMWrapper):
    """An LLM whose requests carry the attached images themselves instead of their references. Each image
    is read once per instance (one run) through ``reader``; messages without a reference go through
    unchanged (the same sequence, so the wrapped LLM's encoding cache keeps working)."""

    def __init__(self, llm: LLM, reader: AttachmentReader) -> None:
        super().__init__(llm)
        self._reader = reader
        self._parts: dict[str, dict[str, Any]] = {}

    async def chat(self, messages: Sequence[Message], **kwargs: Any) -> ChatResponse:
        return await self.wrapped_llm.chat(await self.expanded(messages), **kwargs)

    def stream_chat(
        self, messages: Sequence[Message], *, temperature: float | None = None, usage: Usage | None = None
    ) -> AsyncIterator[str]:
        return self._stream(messages, temperature, usage)

    async def _stream(
        self, messages: Sequence[Message], temperature: float | None, usage: Usage | None
    ) -> AsyncIterator[str]:
        expanded = await self.expanded(messages)
        async for delta in self.wrapped_llm.stream_chat(expanded, temperature=temperature, usage=usage):
            yield delta

    async def expanded(self, messages: Sequence[Message]) -> Sequence[Message]:
        """``messages`` as the endpoint reads them (``messages`` itself when nothing refers to an
        attachment)."""
        if not has_attachment_references(messages):
            return messages
        out: list[Message] = []
        for message in messages:
            if not _referring(message):
                out.append(message)
                continue
            parts = [await self._sent_part(part) for part in message["content"]]
            out.append({**message, "content": parts})
        return out

    async def _sent_part(self, part: Any) -> Any:
        attachment_id = attachment_id_of(part)
        if attachment_id is None:
            return part
        known = self._parts.get(attachment_id)
        if known is None:
            known = self._parts[attachment_id] = await self._part_for(
                attachment_id, str(part.get("name") or "")
            )
        return known

    async def _part_for(self, attachment_id: str, name: str) -> dict[str, Any]:
        attachment = await self._reader(attachment_id)
        if attachment is None:
            return {"type": "text", "text": f"[The attached image {name} was deleted; it cannot be shown.]"}
        if not self.abilities.get("vision"):
            return {
                "type": "text",
                "text": f"[An image is attached ({attachment.name}), but this model cannot read images.]",
            }
        encoded = base64.b64encode(attachment.data).decode("ascii")
        return {"type": "image_url", "image_url": {"url": f"data:{attachment.media_type};base64,{encoded}"}}
