"""A document cut into chunks for retrieval: by its structure first, by size second. Django-free.

A document arrives as Markdown, one text per page (what the parsers make of a PDF, a DOCX, a sheet...;
a format without pages is one page). Each page is parsed with markdown-it-py (CommonMark with tables),
and its top-level blocks are packed into chunks of at most ``max_tokens``:

- a heading closes the chunk before it and becomes part of the *path* of every chunk under it
  (``("Purchasing policy", "Payments")``), across page breaks, until a heading of its level or above;
- paragraphs, lists, quotes and code blocks are packed whole; one too long for a chunk is cut between
  its list items, then between sentences (``.`` ``!`` ``?`` before a space, ``。`` ``！`` ``？`` ``；``),
  then between words or characters;
- a table is never cut inside a row: one that does not fit is cut between rows, each part repeating the
  table's header;
- every chunk knows the pages it spans.

Sizes are the engine's token estimate (:func:`agents.engine.tokens.estimate_text_tokens`: about one
token per CJK character, four ASCII characters per token), so a page of Chinese makes chunks of the same
budget as a page of English. Nothing of the text is dropped but the blank lines between blocks.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.token import Token

from agents.engine.tokens import estimate_text_tokens

__all__ = ["DEFAULT_MAX_TOKENS", "Chunk", "chunk_pages", "passage_with_headings"]

DEFAULT_MAX_TOKENS = 400

_PARSER = MarkdownIt("commonmark").enable("table")


def passage_with_headings(heading_path: Sequence[str], text: str) -> str:
    """What a model reads of a passage (to embed it, to score it against a question): its headings, then
    its text (the headings say what it is about)."""
    return f"{' > '.join(heading_path)}\n\n{text}" if heading_path else text


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？；])")
# A CJK character, or a run of anything else up to and including the whitespace after it.
_CJK = "\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
_ATOM = re.compile(rf"[{_CJK}]\s*|[^\s{_CJK}]+\s*|\s+")


@dataclass(frozen=True, slots=True)
class Chunk:
    """One piece of a document as it is indexed and cited: its text, the headings it sits under, the
    pages it spans (from 1) and its estimated size."""

    text: str
    heading_path: tuple[str, ...]
    page_start: int
    page_end: int
    tokens: int


@dataclass(frozen=True, slots=True)
class _Block:
    """A top-level block of a page: its source text and, for a list or a table, the pieces it may be cut
    into (list items; a table's rows after its ``header``)."""

    text: str
    page: int
    pieces: tuple[str, ...] = ()
    header: str = ""


def chunk_pages(pages: Sequence[str], *, max_tokens: int = DEFAULT_MAX_TOKENS) -> list[Chunk]:
    """The chunks of a document given as Markdown pages (see the module docstring)."""
    if max_tokens < 1:
        raise ValueError("max_tokens must be at least 1")
    packer = _Packer(max_tokens)
    for number, page in enumerate(pages, start=1):
        for item in _blocks(page, number):
            if isinstance(item, _Heading):
                packer.heading(item)
            else:
                packer.block(item)
    packer.flush()
    return packer.chunks


@dataclass(frozen=True, slots=True)
class _Heading:
    level: int
    title: str


def _blocks(page: str, number: int) -> Iterator[_Block | _Heading]:
    lines = page.splitlines()
    tokens = _PARSER.parse(page)
    for index, token in enumerate(tokens):
        if token.level != 0 or token.nesting == -1 or token.map is None:
            continue
        start, end = token.map
        text = "\n".join(lines[start:end]).strip()
        if token.type == "heading_open":
            yield _Heading(int(token.tag[1:]), tokens[index + 1].content.strip())
        elif token.type == "table_open":
            yield _table(tokens, index, lines, number)
        elif token.type in ("bullet_list_open", "ordered_list_open"):
            items = tuple(_children_text(tokens, index, lines, "list_item_open"))
            yield _Block(text, number, pieces=items)
        elif text:
            yield _Block(text, number)


def _table(tokens: list[Token], index: int, lines: list[str], number: int) -> _Block:
    start, end = tokens[index].map or (0, 0)
    body = next((t for t in tokens[index:] if t.type == "tbody_open"), None)
    body_start = body.map[0] if body is not None and body.map is not None else end
    header = "\n".join(lines[start:body_start]).strip()
    rows = tuple(line for line in lines[body_start:end] if line.strip())
    return _Block("\n".join([header, *rows]), number, pieces=rows, header=header)


def _children_text(tokens: list[Token], index: int, lines: list[str], kind: str) -> Iterator[str]:
    depth = tokens[index].level + 1
    for token in tokens[index + 1 :]:
        if token.level < depth:
            return
        if token.type == kind and token.level == depth and token.map is not None:
            yield "\n".join(lines[token.map[0] : token.map[1]]).rstrip()


class _Packer:
    """Packs blocks into chunks under the current heading path."""

    def __init__(self, max_tokens: int) -> None:
        self.max_tokens = max_tokens
        self.chunks: list[Chunk] = []
        self.path: list[tuple[int, str]] = []
        self._parts: list[str] = []
        self._pages: list[int] = []

    def heading(self, heading: _Heading) -> None:
        self.flush()
        self.path = [(level, title) for level, title in self.path if level < heading.level]
        self.path.append((heading.level, heading.title))

    def block(self, block: _Block) -> None:
        if estimate_text_tokens(block.text) <= self.max_tokens:
            self._add(block.text, block.page)
        elif block.header:  # a table: cut between rows, each part under the table's header
            self.flush()
            self._rows(block)
        else:
            for piece in block.pieces or (block.text,):
                for part in _cut(piece, self.max_tokens):
                    self._add(part, block.page)

    def flush(self) -> None:
        if not self._parts:
            return
        text = "\n\n".join(self._parts)
        self.chunks.append(
            Chunk(
                text=text,
                heading_path=tuple(title for _, title in self.path),
                page_start=min(self._pages),
                page_end=max(self._pages),
                tokens=estimate_text_tokens(text),
            )
        )
        self._parts, self._pages = [], []

    def _add(self, text: str, page: int) -> None:
        if self._parts and estimate_text_tokens("\n\n".join([*self._parts, text])) > self.max_tokens:
            self.flush()
        self._parts.append(text)
        self._pages.append(page)

    def _rows(self, table: _Block) -> None:
        room = max(1, self.max_tokens - estimate_text_tokens(table.header + "\n"))
        rows: list[str] = []
        for row in table.pieces:
            for part in _cut(row, room):
                if rows and estimate_text_tokens("\n".join([table.header, *rows, part])) > self.max_tokens:
                    self._add("\n".join([table.header, *rows]), table.page)
                    self.flush()
                    rows = []
                rows.append(part)
        if rows:
            self._add("\n".join([table.header, *rows]), table.page)
            self.flush()


def _cut(text: str, max_tokens: int) -> Iterator[str]:
    """``text`` in pieces of at most ``max_tokens``: between sentences where it can, else between words
    or characters."""
    if estimate_text_tokens(text) <= max_tokens:
        yield text
        return
    sentences = [s for s in _SENTENCE_END.split(text) if s.strip()]
    if len(sentences) == 1:
        yield from _cut_atoms(text, max_tokens)
        return
    current = ""
    for sentence in sentences:
        if estimate_text_tokens(sentence) > max_tokens:
            if current:
                yield current
                current = ""
            yield from _cut_atoms(sentence, max_tokens)
            continue
        joined = _join(current, sentence)
        if current and estimate_text_tokens(joined) > max_tokens:
            yield current
            current = sentence
        else:
            current = joined
    if current:
        yield current


def _join(left: str, right: str) -> str:
    """Two sentences of one text again: a space after an English sentence, none after a Chinese one."""
    if not left:
        return right
    return left + ("" if left[-1] in "。！？；" else " ") + right


def _cut_atoms(text: str, max_tokens: int) -> Iterator[str]:
    current = ""
    for atom in _ATOM.findall(text):
        while estimate_text_tokens(atom) > max_tokens:  # one word longer than a chunk: cut it
            if current.strip():
                yield current.strip()
            current = ""
            size = max(1, len(atom) * max_tokens // estimate_text_tokens(atom))
            yield atom[:size]
            atom = atom[size:]
        if current.strip() and estimate_text_tokens(current + atom) > max_tokens:
            yield current.strip()
            current = ""
        current += atom
    if current.strip():
        yield current.strip()
