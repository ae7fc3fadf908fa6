"""Cards and messages as the fake Feishu holds them, and its card JSON 2.0 checks.

:func:`validate_card` enforces the subset of Feishu's card JSON 2.0 schema our cards use, rejecting
unknown properties the way Feishu does, so a card the fake accepts is one Feishu should accept.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class FakeMessage:
    """A card message the fake holds; ``cards`` is its history, the last one is shown."""

    message_id: str
    chat_id: str
    receive_id: str
    receive_id_type: str
    uuid: str | None
    app_id: str
    cards: list[dict[str, Any]] = field(default_factory=list)

    @property
    def card(self) -> dict[str, Any]:
        return self.cards[-1]


@dataclass(frozen=True)
class CardUpdate:
    """A card replacement: ``kind`` is ``patch``, ``delayed`` or ``callback`` (a click's reply)."""

    message_id: str
    kind: str
    card: dict[str, Any]


# --- card JSON 2.0 checks (the subset of Feishu's schema our cards use; unknown keys rejected) ---

_COLOURS = frozenset(
    "blue wathet turquoise green yellow orange red carmine violet purple indigo grey default".split()
)
_BUTTON_TYPES = frozenset(
    "default primary danger text primary_text danger_text primary_filled danger_filled laser".split()
)
_TOP_KEYS = frozenset({"schema", "config", "header", "body", "card_link"})
_CONFIG_KEYS = frozenset(
    {"update_multi", "streaming_mode", "width_mode", "enable_forward", "summary", "locales"}
)
_HEADER_KEYS = frozenset({"title", "subtitle", "template", "icon", "text_tag_list", "padding"})
_TEXT_KEYS = frozenset({"tag", "content", "text_size", "text_color", "text_align", "lines"})
_COMMON = frozenset({"tag", "element_id", "margin"})
_ELEMENT_KEYS = {
    "div": _COMMON | {"text", "icon", "text_align", "text_size"},
    "markdown": _COMMON | {"content", "text_align", "text_size", "icon"},
    "hr": _COMMON,
    "column_set": _COMMON
    | {"columns", "flex_mode", "horizontal_spacing", "horizontal_align", "background_style"},
    "column": _COMMON | {"elements", "width", "weight", "vertical_align", "vertical_spacing", "padding"},
    "button": _COMMON | {"name", "text", "type", "behaviors", "confirm", "size", "width", "icon", "disabled"},
}


def validate_card(card: dict[str, Any]) -> list[str]:
    """Problems Feishu would reject a card JSON 2.0 for (an empty list when it is acceptable)."""
    problems: list[str] = []
    _keys(card, _TOP_KEYS, "card", problems)
    if card.get("schema") != "2.0":
        problems.append('schema must be "2.0"')
    if "config" in card:
        _keys(card["config"], _CONFIG_KEYS, "config", problems)
    header = card.get("header")
    if header is not None:
        _keys(header, _HEADER_KEYS, "header", problems)
        _text(header.get("title") if isinstance(header, dict) else None, "header.title", problems)
        if isinstance(header, dict) and "subtitle" in header:
            _text(header["subtitle"], "header.subtitle", problems)
        if isinstance(header, dict) and header.get("template", "default") not in _COLOURS:
            problems.append(f"header.template {header.get('template')!r} is not a colour")
    body = card.get("body")
    if not isinstance(body, dict) or not isinstance(body.get("elements"), list):
        problems.append("body.elements must be a list")
        return problems
    names: set[str] = set()
    for element in walk_elements(body["elements"]):
        _element(element, names, problems)
    return problems


def _keys(value: Any, allowed: frozenset[str], where: str, problems: list[str]) -> None:
    if not isinstance(value, dict):
        problems.append(f"{where} must be an object")
    elif unknown := sorted(set(value) - allowed):
        problems.append(f"{where} has unknown properties {unknown}")


def _text(value: Any, where: str, problems: list[str]) -> None:
    _keys(value, _TEXT_KEYS, where, problems)
    if isinstance(value, dict) and (
        value.get("tag") not in ("plain_text", "lark_md") or not isinstance(value.get("content"), str)
    ):
        problems.append(f"{where} must be a plain_text or lark_md text with a string content")


def _element(element: dict[str, Any], names: set[str], problems: list[str]) -> None:
    tag = element.get("tag")
    if tag not in _ELEMENT_KEYS:
        problems.append(f"unsupported element tag {tag!r}")
        return
    _keys(element, _ELEMENT_KEYS[tag], tag, problems)
    if tag == "div":
        _text(element.get("text"), "div.text", problems)
    elif tag == "markdown" and not isinstance(element.get("content"), str):
        problems.append("markdown.content must be a string")
    elif tag == "column_set" and not isinstance(element.get("columns"), list):
        problems.append("column_set.columns must be a list")
    elif tag == "button":
        _button(element, names, problems)


def _button(button: dict[str, Any], names: set[str], problems: list[str]) -> None:
    name = button.get("name")
    if not isinstance(name, str) or not name:
        problems.append("every button needs a name")
    elif name in names:
        problems.append(f"button name {name!r} is not unique")
    else:
        names.add(name)
    _text(button.get("text"), "button.text", problems)
    if button.get("type", "default") not in _BUTTON_TYPES:
        problems.append(f"button type {button.get('type')!r} is unknown")
    behaviors = button.get("behaviors")
    if not isinstance(behaviors, list) or not behaviors:
        problems.append("a button needs behaviors")
    else:
        for behavior in behaviors:
            if (
                not isinstance(behavior, dict)
                or behavior.get("type") != "callback"
                or not isinstance(behavior.get("value"), dict)
            ):
                problems.append("button behaviors must be callbacks with an object value")
    if "confirm" in button:
        confirm = button["confirm"]
        _keys(confirm, frozenset({"title", "text"}), "button.confirm", problems)
        if isinstance(confirm, dict):
            _text(confirm.get("title"), "button.confirm.title", problems)
            _text(confirm.get("text"), "button.confirm.text", problems)


def walk_elements(elements: Any) -> Iterator[dict[str, Any]]:
    for element in elements if isinstance(elements, list) else []:
        if isinstance(element, dict):
            yield element
            yield from walk_elements(element.get("elements"))
            yield from walk_elements(element.get("columns"))


def find_button(
    card: dict[str, Any], approval_id: str | None, decision: str | None = None
) -> dict[str, Any] | None:
    body = card.get("body") if isinstance(card.get("body"), dict) else {}
    for element in walk_elements(body.get("elements")):
        if element.get("tag") != "button":
            continue
        for behavior in element.get("behaviors") or []:
            value = behavior.get("value") if isinstance(behavior, dict) else None
            if not isinstance(value, dict):
                continue
            if (approval_id is None or value.get("approval_id") == approval_id) and (
                decision is None or value.get("decision") == decision
            ):
                return element
    return None
