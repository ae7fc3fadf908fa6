"""JSON at the engine's edges: strict decoding of model output, and a storable form of any value.

Python's :mod:`json` accepts more than JSON (RFC 8259): ``NaN``, ``Infinity`` and ``-Infinity``, and an
object with the same key twice (the last one wins, silently). Model output is untrusted, and a guard rail
that reads ``amount > 50000`` must see the value the tool will get, so everything the engine decodes from
a model goes through :func:`loads_strict`, which refuses those, text after the value, and strings that are
not Unicode (lone surrogates, which no UTF-8 encoder can send on).

The opposite edge is storage: a value that reached the engine some other way (a tool's result, a rewrite
by a hook) may hold something a database refuses (PostgreSQL's ``jsonb`` and ``text`` refuse NUL and lone
surrogates, both backends refuse ``NaN``). :func:`json_safe` returns a copy that every backend stores, with
each such value replaced by a readable, tagged form, so an attempt is never lost because of its arguments.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

#: How deep :func:`json_safe` follows nested containers; deeper ones are stored as a tag.
MAX_STORED_DEPTH = 64

_SURROGATE_RE = re.compile(r"[\ud800-\udfff]")
_UNSTORABLE_TEXT_RE = re.compile(r"[\x00\ud800-\udfff]")


#: Why a text is not strict JSON: not JSON at all (``syntax``), or what Python's decoder would take but
#: strict JSON refuses: a non-finite or unreadable ``number``, a ``duplicate_key``, a string that is
#: ``not_text``.
Problem = Literal["syntax", "number", "duplicate_key", "not_text"]


class StrictJSONError(ValueError):
    """The text is not strict JSON; ``reason`` says why in words a model (or a person) can act on."""

    def __init__(self, reason: str, problem: Problem = "syntax") -> None:
        super().__init__(reason)
        self.reason = reason
        self.problem = problem

    @property
    def is_refusal(self) -> bool:
        """Whether the text is JSON-shaped but holds a value the strict rules refuse: not a typo or prose
        to skip past, but output that must not be used."""
        return self.problem != "syntax"


def _refuse_constant(name: str) -> Any:
    raise StrictJSONError(f"{name} is not a JSON number: send a finite number", "number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise StrictJSONError(f"{text} is too large for a JSON number: send a finite number", "number")
    return value


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                shown = json.dumps(key, ensure_ascii=False)
                raise StrictJSONError(f"the key {shown} appears twice in one object", "duplicate_key")
            seen.add(key)
    return value


_DECODER = json.JSONDecoder(
    parse_constant=_refuse_constant, parse_float=_finite_float, object_pairs_hook=_refuse_duplicates
)


def loads_strict(text: str | bytes) -> Any:
    """Decode ``text`` as strict JSON; raise :class:`StrictJSONError` (a ``ValueError``) when it is not.

    Refused: ``NaN``/``Infinity``/``-Infinity``, a key twice in one object (at any depth), anything after
    the value but whitespace, strings with lone surrogates, and everything ``json.loads`` refuses.
    """
    if isinstance(text, bytes | bytearray):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise StrictJSONError("the text is not UTF-8", "not_text") from None
    return _checked(_DECODER.decode, text)


def raw_decode_strict(text: str, start: int) -> Any:
    """The strict JSON value that starts at ``start`` of ``text`` (text may follow it); raises
    :class:`StrictJSONError` like :func:`loads_strict`."""
    return _checked(lambda t: _DECODER.raw_decode(t, start)[0], text)


def _checked(decode: Callable[[str], Any], text: str) -> Any:
    try:
        value = decode(text)
    except StrictJSONError:
        raise
    except json.JSONDecodeError as exc:
        raise StrictJSONError(f"{exc.msg} at position {exc.pos}") from None
    except RecursionError:
        raise StrictJSONError("the JSON is nested too deeply") from None
    except ValueError as exc:  # e.g. an integer of more digits than Python reads
        raise StrictJSONError(str(exc), "number") from None
    if _has_lone_surrogate(value):
        raise StrictJSONError(
            "a string holds a lone surrogate (\\ud800-\\udfff), which is not text", "not_text"
        )
    return value


def _has_lone_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE_RE.search(item):
                return True
        elif isinstance(item, dict):
            for key, child in item.items():
                if _SURROGATE_RE.search(key):
                    return True
                stack.append(child)
        elif isinstance(item, list):
            stack.extend(item)
    return False


# --- storing -----------------------------------------------------------------------------------------


def text_safe(text: str) -> str:
    """``text`` as every backend stores it: NUL and lone surrogates spelled out (``\\u0000``)."""
    if not _UNSTORABLE_TEXT_RE.search(text):
        return text
    return _UNSTORABLE_TEXT_RE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def json_safe(value: Any, _depth: int = 0) -> Any:
    """A copy of ``value`` that any JSON column stores, unchanged where it already could be.

    Non-finite floats become ``"NaN"``, ``"Infinity"``, ``"-Infinity"``; text loses NUL and lone
    surrogates (:func:`text_safe`); non-string keys become strings; tuples become lists; any other object
    becomes the tagged string ``"<unstorable TypeName: repr>"``; containers nested deeper than
    :data:`MAX_STORED_DEPTH` become ``"<nested too deeply>"``.
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return text_safe(value)
    if isinstance(value, int):
        return value if _int_fits(value) else f"<unstorable int: {value.bit_length()} bits>"
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, Mapping | list | tuple):
        if _depth >= MAX_STORED_DEPTH:
            return "<nested too deeply>"
        if isinstance(value, Mapping):
            return {key_safe(k): json_safe(v, _depth + 1) for k, v in value.items()}
        return [json_safe(v, _depth + 1) for v in value]
    return text_safe(f"<unstorable {type(value).__name__}: {_short_repr(value)}>")


def dumps_storable(value: Any) -> str:
    """``value`` serialised as JSON that every backend stores (see :func:`json_safe`).

    The common case costs one ``json.dumps``: the safe copy is made only when that fails or its text holds
    something a database refuses.
    """
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (ValueError, TypeError, RecursionError):
        return json.dumps(json_safe(value), ensure_ascii=False, allow_nan=False)
    if "\\u0000" in text or _SURROGATE_RE.search(text):
        return json.dumps(json_safe(value), ensure_ascii=False, allow_nan=False)
    return text


def key_safe(key: Any) -> str:
    """A mapping key as a storable JSON key (a string, see :func:`text_safe`)."""
    return text_safe(key) if isinstance(key, str) else text_safe(str(json_safe(key)))


def _int_fits(value: int) -> bool:
    # Python refuses to print integers of more than 4300 digits (about 14,280 bits).
    return value.bit_length() <= 14_000


def _short_repr(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # a repr that raises is still an attempt worth storing
        text = "?"
    return text if len(text) <= 200 else f"{text[:200]}..."


__all__ = [
    "MAX_STORED_DEPTH",
    "Problem",
    "StrictJSONError",
    "dumps_storable",
    "json_safe",
    "key_safe",
    "loads_strict",
    "raw_decode_strict",
    "text_safe",
]
