"""``sse_events`` (one pass over bytes) against ``sse_payloads(sse_lines(...))``, the two-step reference:
the same payloads and the same error, after the same payloads, for every way a body can be split into reads,
malformed bodies included."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from agents.engine.sse import sse_events, sse_lines, sse_payloads

BODIES: list[bytes] = [
    b'data: {"a": 1}\n\ndata: {"b": [1, 2]}\n\ndata: [DONE]\n\n',
    b'data:{"a":1}\r\n\r\ndata: {"a":2}\r\rdata: {"a":3}\n\r\n',
    b'\xef\xbb\xbfdata: {"bom": true}\n\n',
    b'\xef\xbb\xbf\n\ndata: {"x": 1}\n\n',
    b': keep-alive\n\nevent: message\nid: 7\nretry: 10\ndata: {"k": "v"}\n\n',
    b'data: {"multi":\ndata: "line"}\n\n',
    b"data\n\ndata: \n\ndata:  \n\n",
    b'data: {"n": NaN, "i": Infinity, "m": -Infinity}\n\n',
    b'data: {"k": 1, "k": 2, "o": {"z": 1, "z": 3}}\n\n',
    b'data: {"bad": }\n\ndata: {"after": 1}\n\n',
    b"data: [1, 2]\n\n",
    b'data: "text"\n\n',
    b'data: {"a": 1} trailing\n\n',
    b'data: {"a": 1}\n\n: \xff\xfe not utf-8\n\ndata: {"b": 2}\n\n',
    b'data: {"a": "\xe4\xbd\xa0\xe5\xa5\xbd"}\n\ndata: {"c": "\xc3"}\n\n',
    b'data: {"sep": "a\xe2\x80\xa8b\xc2\x85c"}\n\n',
    b"data: \x1c\x1d\n\ndata: \xe3\x80\x80\n\n",
    b'data: {"a": 1}\n\ndata: [DONE] extra\n\ndata: {"never": 1}\n\n',
    b'data: {"unfinished": 1}',
    b'data: {"a": 1}\n\ndata: {"tail": "\xff',
    b'data: {"a": 1}\n\ndata: {"b": 2}\n',
    b"\n\n\n",
    b"",
    b'data: {"deep": ' + b"[" * 50 + b"]" * 50 + b"}\n\n",
    b'data: {"s": "\\ud800"}\n\n',
    b'data: {"big": 1e999}\n\n',
    b"\xef\xbb\xbf",
    b'\xef\xbb\xbfdata: {"a": 1}',
    b'data: {"a": 1}   \n\ndata: {"a": 1}\t\n\ndata: {"a": 1}}\n\ndata: {"a": 1}{"b": 2}\n\n',
    b'data: {"a": 1,}\n\ndata: {"a" 1}\n\ndata: {\n\ndata: {"a": "\x01"}\n\ndata: {"a": 01}\n\n',
    b'data: {"a": 1}\xc2\xa0\n\ndata: \xef\xbb\xbf{"a": 1}\n\ndata: {"a": [NaN, -Infinity, 1e400]}\n\n',
    b'data: {"deep": ' + b"[" * 5000 + b"]" * 5000 + b"}\n\n",
]


async def _source(parts: Sequence[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def _outcome(events: Any) -> tuple[list[dict[str, Any]], tuple[str, str] | None]:
    seen: list[dict[str, Any]] = []
    try:
        async for event in events:
            seen.append(event)
    except (ValueError, RecursionError) as exc:
        return seen, (type(exc).__name__, str(exc))
    return seen, None


def _splits(body: bytes, rng: random.Random) -> list[list[bytes]]:
    ways = [[body], list(body[i : i + 1] for i in range(len(body))), [body, b""]]
    for _ in range(25):
        cuts = sorted(rng.sample(range(len(body) + 1), min(len(body) + 1, rng.randint(1, 6))))
        ways.append([body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)])
    return ways


@pytest.mark.parametrize("body", BODIES)
async def test_one_pass_yields_and_raises_as_the_two_steps(body: bytes) -> None:
    rng = random.Random(body)
    for parts in _splits(body, rng):
        reference = await _outcome(sse_payloads(sse_lines(_source(parts))))
        assert await _outcome(sse_events(_source(parts))) == reference, parts


async def test_one_pass_agrees_on_random_bodies() -> None:
    rng = random.Random(22)
    pieces = [
        b"data: ",
        b"data:",
        b"data",
        b'{"a": 1}',
        b'{"a": NaN}',
        b'{"k": 1, "k": 2}',
        b"[DONE]",
        b"\n",
        b"\r",
        b"\r\n",
        b": c",
        b"\xef\xbb\xbf",
        b"\xff",
        b"\xe4\xbd\xa0",
        b" ",
        b"event: x",
        b"[1]",
        b"{",
    ]
    for _ in range(400):
        body = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        for parts in _splits(body, rng)[:6]:
            reference = await _outcome(sse_payloads(sse_lines(_source(parts))))
            assert await _outcome(sse_events(_source(parts))) == reference, parts


async def test_non_finite_numbers_and_duplicate_keys_are_read_as_before() -> None:
    # The envelope is decoded as ``json.loads`` decodes it, on both paths; what a model writes in a tool
    # call's arguments is a string in it, decoded strictly later (``parsing.decode_arguments``).
    seen, error = await _outcome(
        sse_events(_source([b'data: {"k": 1, "k": 2, "f": {"arguments": "{\\"x\\": NaN}"}}\n\n']))
    )
    assert error is None and seen == [{"k": 2, "f": {"arguments": '{"x": NaN}'}}]
