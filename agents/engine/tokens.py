"""A cheap, download-free token estimate for chat messages.

No tokenizer is shipped with the engine (it must work offline and with any provider), so the count is a
heuristic tuned to err on the high side: ASCII text ~4 characters per token, CJK characters (ideographs,
kana, hangul, full-width punctuation) ~1 token each, other non-ASCII text ~2 characters per token, plus a
fixed overhead per message and per tool call.

Each message's estimate is cached on the message itself under ``"_tokens"`` together with a fingerprint of
the fields that are sent to the provider, so a message whose content is replaced is counted again. Like every
``_`` key, the cache is engine metadata and never leaves the process.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from agents.engine.llm import Message

MESSAGE_OVERHEAD_TOKENS = 4
"""Role, separators and framing the provider adds around every message."""

TOOL_CALL_OVERHEAD_TOKENS = 8
"""The call id, type and function framing of one tool call."""

IMAGE_TOKENS = 765
"""A content part that is an image (OpenAI's cost of one high-detail 512x512 tile plus base)."""

TOKENS_CACHE_KEY = "_tokens"

_CJK_RUN = re.compile(
    "[\u2e80-\u9fff\ua960-\ua97f\uac00-\ud7af\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0002fa1f]+"
)
_NON_ASCII_RUN = re.compile("[^\x00-\x7f]+")


def estimate_text_tokens(text: str) -> int:
    """Estimate the tokens of a text: CJK ~1 per character, ASCII ~4 characters per token."""
    if not text:
        return 0
    length = len(text)
    if text.isascii():
        return (length + 3) // 4
    non_ascii = sum(map(len, _NON_ASCII_RUN.findall(text)))
    cjk = sum(map(len, _CJK_RUN.findall(text)))
    other_non_ascii = non_ascii - cjk
    ascii_chars = length - non_ascii
    return cjk + (other_non_ascii + 1) // 2 + (ascii_chars + 3) // 4


def estimate_message_tokens(message: Message) -> int:
    """Estimate one message, reusing the cached count while its sent fields are unchanged."""
    fingerprint = _fingerprint(message)
    cached = message.get(TOKENS_CACHE_KEY)
    if cached is not None and cached[1] == fingerprint:
        return int(cached[0])
    tokens = _count_message(message)
    message[TOKENS_CACHE_KEY] = (tokens, fingerprint)
    return tokens


def estimate_tokens(messages: Sequence[Message]) -> int:
    """Estimate the prompt tokens of a list of messages (per-message counts are cached)."""
    return sum(map(estimate_message_tokens, messages))


def _fingerprint(message: Mapping[str, Any]) -> int:
    # str hashes are cached by CPython, so re-fingerprinting an unchanged message is cheap; a list
    # comprehension and exact type checks, as this runs for every new message of every turn.
    return hash(
        tuple(
            [
                (key, hash(value) if type(value) is str else value_hash(value))
                for key, value in message.items()
                if key[:1] != "_" and key != "role"
            ]
        )
    )


def value_hash(value: Any) -> int:
    """A hash of a JSON-like value's contents (strings' hashes are cached, so it is cheap to repeat)."""
    kind = type(value)
    if kind is str:
        return hash(value)
    if kind is dict:
        return hash(
            tuple(
                [(key, hash(item) if type(item) is str else value_hash(item)) for key, item in value.items()]
            )
        )
    if kind is list or kind is tuple:
        return hash(tuple([hash(item) if type(item) is str else value_hash(item) for item in value]))
    if isinstance(value, Mapping):
        return hash(tuple((key, value_hash(item)) for key, item in value.items()))
    if isinstance(value, list | tuple):
        return hash(tuple(value_hash(item) for item in value))
    try:
        return hash(value)
    except TypeError:
        return hash(repr(value))


def _count_message(message: Mapping[str, Any]) -> int:
    tokens = MESSAGE_OVERHEAD_TOKENS
    for key, value in message.items():
        if key[:1] == "_" or key == "role" or value is None:
            continue
        if type(value) is str:
            tokens += estimate_text_tokens(value)
        elif key == "tool_calls":
            tokens += _count_tool_calls(value)
        elif key == "content" and isinstance(value, list):
            tokens += sum(_count_content_part(part) for part in value)
        else:
            tokens += _count_value(value)
    return tokens


def _count_tool_calls(calls: Any) -> int:
    if not isinstance(calls, list | tuple):
        return _count_value(calls)
    tokens = 0
    for call in calls:
        tokens += TOOL_CALL_OVERHEAD_TOKENS
        function = call.get("function") if type(call) is dict or isinstance(call, Mapping) else None
        if type(function) is dict or isinstance(function, Mapping):
            tokens += _count_value(function.get("name")) + _count_value(function.get("arguments"))
        else:
            tokens += _count_value(call)
    return tokens


def _count_content_part(part: Any) -> int:
    if isinstance(part, Mapping):
        kind = part.get("type")
        if kind == "text":
            return _count_value(part.get("text"))
        if kind in ("image_url", "input_image", "image"):
            return IMAGE_TOKENS
    return _count_value(part)


def _count_value(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, str):
        return estimate_text_tokens(value)
    if isinstance(value, Mapping):
        return sum(_count_value(item) for item in value.values())
    if isinstance(value, list | tuple):
        return sum(_count_value(item) for item in value)
    return estimate_text_tokens(str(value))
