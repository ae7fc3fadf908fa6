"""What the offline demo model reads out of a question: references, amounts, names and enum values.

"Pay 18,600 CNY for purchase order PO-0001" gives the reference 1 (``PO-0001``; ``order 3`` and ``#3``
work too) and the amount ``18600`` (thousands separators dropped, currency signs and codes ignored).
Arguments are filled from these by what a parameter is: an id takes the reference, an amount the
amount, a name parameter the capitalised name after "from", "by" or "supplier". Nothing here calls a
model; it is a word heuristic, honest about being one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Lookarounds are ASCII-only: Chinese characters count as word characters to ``\w``.
_REFERENCE = re.compile(r"(?<![A-Za-z0-9])[A-Z]{1,6}-(\d{1,9})(?![0-9])")
_NUMBERED = re.compile(
    r"(?:\b(?:order|orders|po|no\.?|number|id)\s*#?|#|订单|编号)\s*(\d{1,9})(?![0-9.,])", re.I
)
_NUMBER = re.compile(r"(?<![A-Za-z0-9_.,-])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![0-9A-Za-z_])")
_QUOTED = re.compile(r"[\"“'‘「]([^\"”'’」]{1,200})[\"”'’」]")
_NAME = re.compile(
    r"\b(?:from|by|supplier|vendor|customer)\s+((?:[A-Z0-9][\w&.'-]*)(?:\s+[A-Z0-9][\w&.'-]*)*)"
)
_AMOUNT_WORDS = ("amount", "total", "price", "sum", "value")
_NAME_WORDS = ("supplier", "vendor", "customer", "name")
# Words for enum values in questions (English plurals are matched by themselves).
ENUM_WORDS = {
    "draft": ("草稿",),
    "approved": ("已批准", "已审批", "批准的"),
    "paid": ("已付款", "已支付", "付过"),
    "pending": ("待处理", "待审批"),
}


@dataclass(frozen=True)
class QuestionFacts:
    """The values a question gives, in the order it gives them."""

    references: tuple[int, ...] = ()
    amounts: tuple[str, ...] = ()
    quoted: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    text: str = ""

    @property
    def has_value(self) -> bool:
        return bool(self.references or self.amounts)


def question_facts(question: str) -> QuestionFacts:
    """References, amounts, quoted text and names of ``question``."""
    taken: list[tuple[int, int]] = []
    references: list[tuple[int, int]] = []
    for pattern in (_REFERENCE, _NUMBERED):
        for match in pattern.finditer(question):
            if not any(start <= match.start(1) < end for start, end in taken):
                references.append((match.start(1), int(match.group(1))))
                taken.append(match.span(1))
    amounts = [
        match.group(1).replace(",", "")
        for match in _NUMBER.finditer(question)
        if not any(start <= match.start(1) < end for start, end in taken)
    ]
    names = [name.rstrip(".,'") for name in _NAME.findall(question) if not _REFERENCE.fullmatch(name)]
    return QuestionFacts(
        references=tuple(value for _, value in sorted(references)),
        amounts=tuple(amounts),
        quoted=tuple(_QUOTED.findall(question)),
        names=tuple(names),
        text=question,
    )


def _enum_value(spec: Mapping[str, Any], lowered: str) -> Any:
    for value in spec["enum"]:
        words = (str(value).lower(), *ENUM_WORDS.get(str(value).lower(), ()))
        if any(
            re.search(rf"(?<![a-z]){re.escape(w)}(?![a-z])", lowered) or w + "s" in lowered for w in words
        ):
            return value
    return None


def _is_id(name: str) -> bool:
    return name == "id" or name.endswith("_id")


def _described(name: str, spec: Mapping[str, Any], words: tuple[str, ...]) -> bool:
    text = f"{name} {spec.get('description', '')}".lower()
    return any(word in text for word in words)


def _number(raw: str, kind: str, spec: Mapping[str, Any] | None = None) -> int | float | str:
    """``raw`` as the schema's kind, kept within its ``minimum`` and ``maximum`` when it gives them."""
    if kind not in ("integer", "number"):
        return raw
    value: int | float = int(float(raw)) if kind == "integer" else float(raw)
    spec = spec or {}
    if isinstance(spec.get("maximum"), int | float):
        value = min(value, spec["maximum"])
    if isinstance(spec.get("minimum"), int | float):
        value = max(value, spec["minimum"])
    return value


def arguments_for(schema: Mapping[str, Any], facts: QuestionFacts) -> dict[str, Any]:
    """Fill an object schema's properties from the question, required ones with a sensible default."""
    properties: Mapping[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    references = list(facts.references)
    amounts = list(facts.amounts)
    quoted = list(facts.quoted)
    names = list(facts.names)
    lowered = facts.text.lower()
    args: dict[str, Any] = {}
    for name, spec in properties.items():
        kind = spec.get("type")
        if "enum" in spec:
            match = _enum_value(spec, lowered)
            if match is not None or name in required:
                args[name] = match if match is not None else spec["enum"][0]
        elif kind in ("integer", "number") and _is_id(name) and (references or amounts):
            args[name] = references.pop(0) if references else int(float(amounts.pop(0)))
        elif _described(name, spec, _AMOUNT_WORDS) and kind in ("integer", "number", "string") and amounts:
            args[name] = _number(amounts.pop(0), kind, spec)
        elif kind in ("integer", "number"):
            pool = amounts or references
            if pool:
                args[name] = _number(str(pool.pop(0)), kind, spec)
            elif name in required:
                args[name] = spec.get("default", spec.get("minimum", 1))
        elif kind == "string":
            if quoted:
                args[name] = quoted.pop(0)
            elif names and _described(name, spec, _NAME_WORDS):
                args[name] = names.pop(0)
            elif name in required:
                args[name] = spec.get("default") or facts.text[:120]
        elif kind == "boolean" and name in required:
            args[name] = bool(spec.get("default", False))
        elif kind == "array" and name in required:
            args[name] = []
        elif kind == "object" and name in required:
            args[name] = arguments_for(spec, facts)
    return args
