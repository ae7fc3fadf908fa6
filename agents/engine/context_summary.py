"""Message markers of the context guard and its summarising request (prompt, transcript, clipping).

Markers are ``_`` keys on a message (engine metadata, never sent to a provider):

* ``"_pinned": True`` -- survives every compaction verbatim (the engine pins the user's follow-ups).
* ``"_summary": True`` -- a compaction summary; its content starts with ``"[Conversation summary]"``.
* ``"_bookkeeping": True`` -- a user-role message the engine wrote itself (a JSON-mode observation, a
  cycle warning, a reflection or checklist prompt): a possible cut point, but not a user turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agents.engine.llm import Message
from agents.engine.tokens import estimate_text_tokens

PINNED_KEY = "_pinned"
SUMMARY_KEY = "_summary"
BOOKKEEPING_KEY = "_bookkeeping"
SUMMARY_PREFIX = "[Conversation summary]"

_TRANSCRIPT_ENTRY_MAX_CHARS = 4000
_TRANSCRIPT_OVERHEAD_TOKENS = 64

SUMMARY_SYSTEM_PROMPT = """\
You compress the earlier part of a conversation between a user and an AI agent that calls tools, so that \
the agent can continue the work with a shorter context.

Write a summary that preserves:
- facts, figures, names and identifiers that were established;
- decisions made, and constraints or preferences the user stated;
- what each tool call found (tool name, key results, errors);
- open questions and unfinished tasks;
- the most recent chain of reasoning: what the agent was doing last and what it planned to do next.

Write in the language the user writes in (for example Chinese if the user writes Chinese). Be concise and \
factual; do not invent anything and do not answer the user. Keep it under about {max_tokens} tokens. Reply \
with the summary only."""

_SUMMARY_REQUEST = "Summarise this conversation:\n\n{transcript}"


def is_user_turn(message: Mapping[str, Any]) -> bool:
    """Whether a message opens a user turn: role ``"user"`` and not pinned, a summary or bookkeeping."""
    return (
        message.get("role") == "user"
        and not message.get(PINNED_KEY)
        and not message.get(SUMMARY_KEY)
        and not message.get(BOOKKEEPING_KEY)
    )


def is_summary_message(message: Mapping[str, Any]) -> bool:
    """Whether a message is a compaction summary written by :class:`ContextGuard`."""
    return bool(message.get(SUMMARY_KEY))


def summary_request(
    messages: Sequence[Message], *, max_summary_tokens: int, max_tokens: int
) -> list[Message]:
    """The two-message request that asks the model to summarise ``messages`` within ``max_tokens``."""
    system_prompt = SUMMARY_SYSTEM_PROMPT.format(max_tokens=max_summary_tokens)
    transcript_limit = max_tokens - estimate_text_tokens(system_prompt) - _TRANSCRIPT_OVERHEAD_TOKENS
    transcript = render_transcript(messages, max_tokens=transcript_limit)
    return [
        {"role": "system", "content": system_prompt},
        {"role": "user", "content": _SUMMARY_REQUEST.format(transcript=transcript)},
    ]


def render_transcript(messages: Sequence[Message], *, max_tokens: int) -> str:
    """Render messages as a plain-text transcript for the summariser, within about ``max_tokens``.

    Long entries are shortened in the middle; when the whole is still too long, the oldest entries are left
    out first (earlier summaries are kept, they carry everything before them).
    """
    tool_names: dict[str, str] = {}
    entries: list[tuple[str, bool]] = []
    for message in messages:
        role = message.get("role")
        if role in ("system", "developer"):
            continue
        text = _content_text(message.get("content"))
        if is_summary_message(message):
            entries.append((f"Earlier summary:\n{text.removeprefix(SUMMARY_PREFIX).strip()}", True))
            continue
        if role == "assistant":
            lines = [f"Assistant: {_clip(text)}"] if text.strip() else []
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                name = str(function.get("name", "?"))
                tool_names[str(call.get("id"))] = name
                lines.append(
                    f"Assistant called tool {name} with arguments {_clip(str(function.get('arguments', '')))}"
                )
            entries.extend((line, False) for line in lines)
        elif role == "tool":
            name = tool_names.get(str(message.get("tool_call_id")), "tool")
            entries.append((f"Tool result ({name}): {_clip(text)}", False))
        elif role == "user":
            label = "User"
            if message.get(PINNED_KEY):
                label = "User (while the agent was working)"
            elif message.get(BOOKKEEPING_KEY):
                label = "Engine note to the agent"
            entries.append((f"{label}: {_clip(text)}", False))
        else:
            entries.append((f"{role}: {_clip(text)}", False))

    costs = [estimate_text_tokens(text) + 1 for text, _ in entries]
    total = sum(costs)
    omitted = 0
    kept: list[str] = []
    for (text, is_summary), cost in zip(entries, costs, strict=True):
        if total > max_tokens and not is_summary:
            total -= cost
            omitted += 1
            continue
        kept.append(text)
    if omitted:
        kept.insert(0, f"[... {omitted} earlier entries omitted ...]")
    return "\n\n".join(kept)


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping) and part.get("type") == "text":
                parts.append(str(part.get("text", "")))
            elif isinstance(part, Mapping):
                parts.append(f"[{part.get('type', 'attachment')}]")
            else:
                parts.append(str(part))
        return "\n".join(parts)
    return str(content)


def _clip(text: str, limit: int = _TRANSCRIPT_ENTRY_MAX_CHARS) -> str:
    if len(text) <= limit:
        return text
    head = limit * 3 // 4
    tail = limit - head
    return f"{text[:head]} [... {len(text) - limit} characters omitted ...] {text[-tail:]}"


def clip_to_tokens(text: str, max_tokens: int) -> str:
    """Shorten a text from the end until its estimate fits ``max_tokens``."""
    while estimate_text_tokens(text) > max_tokens and text:
        ratio = max_tokens / estimate_text_tokens(text)
        text = text[: max(int(len(text) * ratio) - 1, 0)].rstrip()
    return text
