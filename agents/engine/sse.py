"""Server-sent events, as OpenAI-compatible endpoints stream a completion.

The streamed answer is decoded here rather than by the SDK's typed ``AsyncStream``, which builds a
pydantic ``ChatCompletionChunk`` for every token: see :func:`sse_payloads`. :func:`sse_events` is the two
steps, :func:`sse_lines` then :func:`sse_payloads`, in one pass over the body's bytes (what the client uses;
``tests/engine/test_sse_one_pass.py`` checks it against the two, malformed input included).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterable, Callable
from typing import Any


class _LineSplitter:
    """A body arriving in chunks cut into lines that end at CR LF, LF or CR, a line may span chunks."""

    __slots__ = ("skip_lf", "tail")

    def __init__(self) -> None:
        self.tail = b""  # the unfinished line the chunks so far end with
        self.skip_lf = False  # the last chunk ended in CR: an LF starting the next one ends no line

    def feed(self, chunk: bytes) -> tuple[bytes, list[bytes]]:
        """``chunk`` after the unfinished line before it (empty for a chunk that adds nothing), and the
        lines it finishes."""
        if self.skip_lf and chunk[:1] == b"\n":
            chunk = chunk[1:]
        if not chunk:
            return b"", []
        self.skip_lf = chunk[-1:] == b"\r"
        if self.tail:
            chunk = self.tail + chunk
        lines = chunk.splitlines()
        self.tail = b"" if chunk[-1:] in (b"\n", b"\r") else lines.pop()
        return chunk, lines


async def sse_lines(chunks: AsyncIterable[bytes]) -> AsyncGenerator[str, None]:
    """The lines of an event stream's body, each yielded as soon as its end arrives.

    Lines end at CR LF, LF or CR, as the SSE spec says; ``httpx``'s ``aiter_lines`` (behind the
    SDK's ``iter_lines``) would also split at U+2028, U+0085 and other Unicode line breaks, which
    a provider may send unescaped inside a JSON string. The body is UTF-8; a leading BOM is dropped.
    """
    splitter = _LineSplitter()
    first = True
    async for chunk in chunks:
        for line in splitter.feed(chunk)[1]:
            text = line.decode()
            if first:
                text = text.removeprefix("\ufeff")
                first = False
            yield text
    if tail := splitter.tail:
        yield tail.decode().removeprefix("\ufeff") if first else tail.decode()


async def sse_payloads(lines: AsyncIterable[str]) -> AsyncGenerator[dict[str, Any], None]:
    """The JSON payloads of an OpenAI-style event stream, one dict an event, until ``data: [DONE]``.

    We decode the stream ourselves instead of iterating the SDK's typed ``AsyncStream``: that
    builds a pydantic ``ChatCompletionChunk`` for every token (``construct_type`` over the whole
    chunk), which cost about an eighth of a busy server process's CPU, while we read only
    ``choices[0].delta.content`` and ``usage``.

    Per the SSE spec an event is the ``data:`` lines before an empty line, joined with ``\\n``
    (one leading space of a value is dropped); ``:`` comments (keep-alives), ``event:``,
    ``id:``, ``retry:`` and unknown fields carry nothing we read, and an event left unfinished
    when the stream ends is discarded. Events of every type are decoded alike, as the SDK does.
    An event without data is skipped. Raises ``ValueError`` for data that is not a JSON object.
    """
    data: list[str] = []
    async for line in lines:
        if line:
            if line.startswith("data:"):
                value = line[5:]
                data.append(value[1:] if value[:1] == " " else value)
            elif line == "data":
                data.append("")
            continue
        if not data:
            continue
        payload = data[0] if len(data) == 1 else "\n".join(data)
        data = []
        if payload.startswith("[DONE]"):
            return
        if not payload.strip():
            continue
        decoded = json.loads(payload)
        if not isinstance(decoded, dict):
            raise ValueError(f"an event's data is not a JSON object: {payload[:80]!r}")
        yield decoded


_BOM = b"\xef\xbb\xbf"


async def sse_events(chunks: AsyncIterable[bytes]) -> AsyncGenerator[dict[str, Any], None]:
    """``sse_payloads(sse_lines(chunks))`` in one pass, the same payloads and the same errors at the same
    point: lines are split and read as bytes, and each line is still checked to be UTF-8 when it is read
    (skipped for a read that is all ASCII, which is UTF-8); an event's data is decoded to text once, and
    decoded as JSON as :func:`sse_payloads` decodes it."""
    splitter = _LineSplitter()
    first = True
    data: list[bytes] = []
    async for piece in chunks:
        chunk, lines = splitter.feed(piece)
        ascii = chunk.isascii()
        for line in lines:
            if not ascii:
                line.decode()  # raises where sse_lines raised: a line that is not UTF-8
            if first:
                line = line.removeprefix(_BOM)
                first = False
            if line:
                if line.startswith(b"data:"):
                    value = line[5:]
                    data.append(value[1:] if value[:1] == b" " else value)
                elif line == b"data":
                    data.append(b"")
                continue
            if not data:
                continue
            payload = (data[0] if len(data) == 1 else b"\n".join(data)).decode()
            data = []
            if payload.startswith("[DONE]"):
                return
            if not payload.strip():
                continue
            decoded = _loads(payload)
            if not isinstance(decoded, dict):
                raise ValueError(f"an event's data is not a JSON object: {payload[:80]!r}")
            yield decoded
    if splitter.tail:
        splitter.tail.decode()  # the last line, unfinished: its event is discarded, but it must be UTF-8


# The scanner ``json.loads`` runs (``JSONDecoder.scan_once``), with the same default settings.
_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # set in __init__, absent from typeshed


def _loads(payload: str) -> Any:
    """``json.loads(payload)``: an object with nothing before or after it is taken from the scanner at once,
    as ``json.loads`` takes it (it runs the same scanner from the first non-space character and then checks
    that only spaces follow); anything else, an error included, goes through ``json.loads`` itself."""
    if payload[:1] == "{":
        try:
            value, end = _SCAN(payload, 0)
        except (StopIteration, ValueError):
            pass  # json.loads raises its own error for it below
        else:
            if end == len(payload):
                return value
    return json.loads(payload)
