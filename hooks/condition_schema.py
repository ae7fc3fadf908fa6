"""A policy's condition checked against the parameter schemas of the actions it covers, when it is saved.

Two mistakes are caught before they make every call wait (a condition that cannot be evaluated requires
approval): an argument that the covered actions do not have (``amonut > 10000``), and a literal of a
type the argument cannot be compared with (``order_id == "seven"`` for an integer, ``due_date < 20270101``
for a date). The rules follow :mod:`hooks.conditions`:

- A number literal fits ``number`` and ``integer`` parameters, and ``string`` ones unless the string is a
  date, a date-time, another non-numeric ``format`` or an ``enum`` of words (payment APIs send amounts
  as decimal strings, declared as plain strings).
- A date literal (``"2027-01-01"``) fits a string of format ``date`` or without a format; a date-time
  literal a string of format ``date-time`` or without a format. Other text fits strings that are not
  dates. ``true``/``false`` fit booleans; ``null`` fits anything.
- ``"x" in tags`` checks the literal against the array's items; ``"x" in note`` is a substring test.

Which actions count: each action the policy names must have every argument the condition reads; for a
connector the policy covers, at least one of its covered actions must (the others' calls, lacking it,
always need approval, as a missing argument does). Types are checked in every covered action that has the
argument. Actions whose schema declares no properties, and objects open to any property, are not checked.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

from hooks.conditions import (
    Condition,
    ConditionError,
    argument_of,
    literal_of,
    parse_condition,
    value_kind,
)

NUMERIC_STRING_FORMATS = frozenset({"", "decimal", "number", "double", "float", "int32", "int64", "integer"})
_ANY: Mapping[str, Any] = {}  # a parameter that exists but whose type is not declared


@dataclass(frozen=True, slots=True)
class ActionScope:
    """Covered actions that together must know each argument: one action the policy names, or the covered
    actions of one connector. ``schemas`` holds (action label, parameter schema) pairs."""

    label: str
    schemas: tuple[tuple[str, Mapping[str, Any]], ...]


@dataclass(frozen=True, slots=True)
class UnknownArgument:
    """No covered action of ``scope`` has the argument."""

    argument: str
    scope: str


@dataclass(frozen=True, slots=True)
class WrongType:
    """The argument, as ``action`` declares it, cannot be compared with the literal ``value``."""

    argument: str
    action: str
    declared: str  # the parameter's kind in words' keys: number, text, date, datetime, bool, list, object…
    value: str  # the literal as written in the condition


SchemaProblem = UnknownArgument | WrongType


@dataclass(frozen=True, slots=True)
class _Use:
    """An argument read by the condition, with the literal it is compared with (if any)."""

    path: tuple[str, ...]
    literals: tuple[Any, ...] = ()
    inside: bool = False  # the argument is the container of an ``in`` test


def covered_scopes(
    *, actions: Iterable[Any], connectors: Iterable[Any], writes_only: bool
) -> list[ActionScope]:
    """The scopes of a policy covering ``actions`` (ConnectorAction rows) and ``connectors`` (sync)."""
    scopes = [ActionScope(label=str(a), schemas=((str(a), a.parameters or {}),)) for a in actions]
    for connector in connectors:
        rows = connector.actions.filter(is_active=True)
        if writes_only:
            rows = rows.filter(is_write=True)
        scopes.append(
            ActionScope(
                label=connector.name,
                schemas=tuple((str(a), a.parameters or {}) for a in rows.select_related("connector")),
            )
        )
    return scopes


def condition_schema_problems(
    condition: str | Condition, scopes: Sequence[ActionScope]
) -> list[SchemaProblem]:
    """What in ``condition`` does not fit the covered actions' schemas (nothing for a condition that does
    not parse: that is reported on its own)."""
    try:
        parsed = condition if isinstance(condition, Condition) else parse_condition(condition)
    except ConditionError:
        return []
    uses = list(_uses(parsed.tree))
    problems: list[SchemaProblem] = []
    for path in dict.fromkeys(use.path for use in uses):
        argument = ".".join(path)
        for scope in scopes:
            checked = [(label, schema) for label, schema in scope.schemas if _declares_properties(schema)]
            found = [
                (label, node) for label, schema in checked if (node := _schema_at(schema, path)) is not None
            ]
            if checked and not found:
                problems.append(UnknownArgument(argument=argument, scope=scope.label))
                continue
            for label, node in found:
                for use in (u for u in uses if u.path == path):
                    for literal in use.literals:
                        if not _fits(node, literal, use.inside):
                            problems.append(
                                WrongType(argument, label, _declared(node, use.inside), _spell(literal))
                            )
    return list(dict.fromkeys(problems))


def condition_schema_messages(condition: str, scopes: Sequence[ActionScope]) -> list[str]:
    """The problems as messages for the admin and the API, in the active language."""
    return [_message(problem) for problem in condition_schema_problems(condition, scopes)]


# --- reading the condition ----------------------------------------------------------------------------


def _uses(tree: ast.expr) -> Iterable[_Use]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Name | ast.Attribute) and (path := argument_of(node)) is not None:
            yield _Use(path)
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for op, left, right in zip(node.ops, operands, operands[1:], strict=False):
            membership = isinstance(op, ast.In | ast.NotIn)
            if (path := argument_of(left)) is not None:
                if membership and isinstance(right, ast.List | ast.Tuple):
                    yield _Use(path, tuple(v for ok, v in map(literal_of, right.elts) if ok))
                elif (literal := literal_of(right))[0] and not membership:
                    yield _Use(path, (literal[1],))
            if (path := argument_of(right)) is not None and (literal := literal_of(left))[0]:
                yield _Use(path, (literal[1],), inside=membership)


# --- reading the schema -------------------------------------------------------------------------------


def _properties(node: Mapping[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for key in ("allOf", "anyOf", "oneOf"):
        for part in node.get(key) or []:
            if isinstance(part, Mapping):
                merged.update(_properties(part))
    properties = node.get("properties")
    if isinstance(properties, Mapping):
        merged.update(properties)
    return merged


def _declares_properties(schema: Mapping[str, Any]) -> bool:
    return isinstance(schema, Mapping) and bool(_properties(schema)) and not _open(schema)


def _open(node: Mapping[str, Any]) -> bool:
    extra = node.get("additionalProperties", False)
    return extra is True or isinstance(extra, Mapping)


def _schema_at(schema: Mapping[str, Any], path: tuple[str, ...]) -> Mapping[str, Any] | None:
    """The schema of the argument at ``path``; ``None`` when it cannot exist."""
    node: Mapping[str, Any] = schema
    for part in path:
        if not isinstance(node, Mapping):
            return None
        properties = _properties(node)
        if part in properties:
            node = properties[part] if isinstance(properties[part], Mapping) else _ANY
        elif not properties and _types(node) <= {"object"}:
            return _ANY  # an object without declared properties may hold anything
        elif _open(node):
            return _ANY
        else:
            return None
    return node


def _types(node: Mapping[str, Any]) -> set[str]:
    declared = node.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {t for t in declared if isinstance(t, str)}
    return set()


def _fits(node: Mapping[str, Any], literal: Any, inside: bool) -> bool:
    types = _types(node)
    if not types:
        return True  # undeclared: nothing to check against
    if inside:  # "x" in tags / "x" in note
        if "array" in types and isinstance(node.get("items"), Mapping):
            return _fits(node["items"], literal, False)
        return "array" in types or ("string" in types and isinstance(literal, str))
    kind = value_kind(literal)
    if kind == "null":
        return True
    if kind == "bool":
        return "boolean" in types
    fmt = str(node.get("format") or "")
    enum = node.get("enum")
    if kind == "number":
        if types & {"number", "integer"}:
            return True
        words = isinstance(enum, list) and not all(isinstance(v, int | float) or _decimal(v) for v in enum)
        return "string" in types and fmt in NUMERIC_STRING_FORMATS and not words
    if kind == "decimal_text":
        return bool(types & {"number", "integer", "string"}) and fmt not in ("date", "date-time")
    if "string" not in types:
        return False
    if kind == "date":
        return fmt in ("", "date")
    if kind == "datetime":
        return fmt in ("", "date-time")
    return fmt not in ("date", "date-time")


def _decimal(value: Any) -> bool:
    return isinstance(value, str) and value_kind(value) == "decimal_text"


def _declared(node: Mapping[str, Any], inside: bool) -> str:
    types = _types(node)
    if inside and "array" in types and isinstance(node.get("items"), Mapping):
        return "list of " + _declared(node["items"], False)
    fmt = str(node.get("format") or "")
    if "string" in types:
        if fmt == "date":
            return "date"
        if fmt == "date-time":
            return "datetime"
        return "enum" if isinstance(node.get("enum"), list) else "text"
    for name, kind in (("integer", "number"), ("number", "number"), ("boolean", "bool")):
        if name in types:
            return kind
    return "list" if "array" in types else "object"


def _spell(literal: Any) -> str:
    if isinstance(literal, bool):
        return "true" if literal else "false"
    if literal is None:
        return "null"
    if isinstance(literal, str):
        return f'"{literal}"'
    return repr(literal)


def _words(declared: str) -> str:
    words = {
        "number": _("a number"),
        "text": _("text"),
        "enum": _("one of a fixed list of words"),
        "date": _("a date"),
        "datetime": _("a date and time"),
        "bool": _("true or false"),
        "list": _("a list"),
        "object": _("an object"),
    }
    if declared.startswith("list of "):
        return _("a list of %(items)s") % {"items": _words(declared.removeprefix("list of "))}
    return words.get(declared, declared)


def _message(problem: SchemaProblem) -> str:
    if isinstance(problem, UnknownArgument):
        return _(
            "The condition names %(argument)s, but %(scope)s has no such argument: every call would need "
            "approval."
        ) % {"argument": problem.argument, "scope": problem.scope}
    return _(
        "The condition compares %(argument)s with %(value)s, but %(action)s declares %(argument)s as "
        "%(declared)s: they cannot be compared, so every call would need approval."
    ) % {
        "argument": problem.argument,
        "value": problem.value,
        "action": problem.action,
        "declared": _words(problem.declared),
    }
