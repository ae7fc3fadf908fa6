"""``plain_content``, the streamed answer's shortcut for a chunk that is only a piece of the answer, reads what
``chunk_usage`` and ``delta_content`` read, or declines."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from agents.engine.completion import chunk_usage, delta_content
from agents.engine.llm import plain_content

USAGE = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
DELTAS: list[Any] = [
    {"content": "hi"},
    {"content": ""},
    {"content": None},
    {"content": 3},
    {"content": ["x"]},
    {"role": "assistant", "content": "a"},
    {"reasoning_content": "think"},
    {"content": "b", "tool_calls": []},
    {},
    None,
    "text",
    [],
]
CHOICES: list[Any] = [
    *[[{"index": 0, "delta": delta}] for delta in DELTAS],
    [{"index": 0, "delta": {"content": "x"}, "usage": USAGE}],
    [{"index": 0, "delta": {"content": "x"}, "usage": None}],
    [{"index": 0, "delta": {"content": "x"}, "usage": "bad"}],
    [{"index": 0}],
    [],
    None,
    {"0": {"delta": {"content": "x"}}},
    ["not a dict"],
    [{"index": 0, "delta": {"content": "x"}}, {"index": 1, "delta": {"content": "y"}}],
]
TOPS: list[dict[str, Any]] = [{}, {"usage": USAGE}, {"usage": None}, {"usage": "bad"}, {"model": "m"}]


def _slow(chunk: dict[str, Any]) -> tuple[Any, Any]:
    try:
        return chunk_usage(chunk), delta_content(chunk)
    except ValueError as exc:
        return "error", str(exc)


@pytest.mark.parametrize(("choices", "top"), list(itertools.product(CHOICES, TOPS)))
def test_the_shortcut_agrees_with_the_full_reading(choices: Any, top: dict[str, Any]) -> None:
    chunk = {**top, "choices": choices} if choices is not None else dict(top)
    fast = plain_content(chunk)
    if fast is not None:
        assert _slow(chunk) == (None, fast)  # no usage, the same content
        assert fast
    else:
        usage, content = _slow(chunk)
        assert usage is not None or not content or usage == "error"  # declined only where more is to read
