"""Approval-policy conditions: a small, safe expression language over a tool call's arguments.

A condition is written like a Python expression, for example ``amount > 50000 and currency == "CNY"``
or ``order.total >= 1000 or vendor.country not in ["CN", "HK"]``. It is parsed once with :mod:`ast`
into an allow-listed tree and evaluated by walking that tree; nothing is ever passed to ``eval``.

Allowed: comparisons (``== != < <= > >= in not in``, chained), ``and``/``or``/``not``, parentheses,
string/number/``true``/``false``/``null`` literals (Python spellings work too), lists of literals, argument
names and dotted lookups into nested objects (``order.total``). Anything else is a syntax error.

Evaluation fails closed: an argument that is missing, a comparison of values of different types (``"60000"``
with ``60000``, ``true`` with ``1``), a number that is not finite (NaN, infinity) or any other error makes
:func:`condition_requires_approval` answer ``True`` (approval required). ``null`` may be compared with
anything (``approver == null``).
"""

from __future__ import annotations

import ast
import logging
import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

logger = logging.getLogger(__name__)

MAX_CONDITION_CHARS = 1000
MAX_NODES = 200
_LITERAL_NAMES = {"true": True, "false": False, "null": None, "none": None}

_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


class ConditionError(ValueError):
    """The condition text is not a valid condition (raised when parsing)."""


class _Missing(LookupError):
    """An argument the condition names is not in the call's arguments."""


@dataclass(frozen=True, slots=True)
class Condition:
    """A parsed condition, safe to evaluate against any arguments."""

    source: str
    tree: ast.expr
    paths: tuple[tuple[str, ...], ...]

    def evaluate(self, arguments: Mapping[str, Any]) -> bool:
        """The condition's truth for ``arguments``; raises on a missing argument or a type error."""
        values = {path: _lookup(arguments, path) for path in self.paths}
        return _truth(_eval(self.tree, values))


def _path_of(node: ast.expr) -> tuple[str, ...] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return tuple(reversed(parts))
    return None


def _check(node: ast.AST, paths: list[tuple[str, ...]]) -> None:
    """Raise :class:`ConditionError` unless every node is allowed; collect argument paths."""
    if isinstance(node, ast.BoolOp):
        if not isinstance(node.op, ast.And | ast.Or):
            raise ConditionError("only 'and' and 'or' combine conditions")
        for value in node.values:
            _check(value, paths)
    elif isinstance(node, ast.UnaryOp):
        if isinstance(node.op, ast.Not):
            _check(node.operand, paths)
        elif isinstance(node.op, ast.USub | ast.UAdd) and isinstance(node.operand, ast.Constant):
            _check(node.operand, paths)
        else:
            raise ConditionError("only 'not' and the sign of a number are allowed before a value")
    elif isinstance(node, ast.Compare):
        for op in node.ops:
            if type(op) not in _COMPARE:
                raise ConditionError("use ==, !=, <, <=, >, >=, in or not in to compare")
        _check(node.left, paths)
        for comparator in node.comparators:
            _check(comparator, paths)
    elif isinstance(node, ast.Constant):
        if not isinstance(node.value, str | int | float | bool) and node.value is not None:
            raise ConditionError("only text, numbers, true, false and null are allowed as values")
        if isinstance(node.value, float) and not math.isfinite(node.value):
            raise ConditionError("numbers in a condition must be finite")
    elif isinstance(node, ast.List | ast.Tuple):
        for element in node.elts:
            if not isinstance(element, ast.Constant | ast.UnaryOp):
                raise ConditionError("lists may only hold literal values")
            _check(element, paths)
    elif isinstance(node, ast.Name | ast.Attribute):
        path = _path_of(node)
        if path is None:
            raise ConditionError("a dotted name must start with an argument name")
        if any(part.startswith("_") for part in path):
            raise ConditionError("names starting with '_' are not allowed")
        if len(path) == 1 and path[0].lower() in _LITERAL_NAMES:
            return
        paths.append(path)
    else:
        raise ConditionError(f"{type(node).__name__} is not allowed in a condition")


@lru_cache(maxsize=512)
def parse_condition(source: str) -> Condition:
    """Parse ``source`` into a :class:`Condition`; raise :class:`ConditionError` when it is not valid."""
    text = (source or "").strip()
    if not text:
        raise ConditionError("the condition is empty")
    if len(text) > MAX_CONDITION_CHARS:
        raise ConditionError(f"the condition is longer than {MAX_CONDITION_CHARS} characters")
    try:
        module = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ConditionError(f"the condition is not a valid expression ({exc.__class__.__name__})") from exc
    if sum(1 for _ in ast.walk(module)) > MAX_NODES:
        raise ConditionError("the condition is too complex")
    paths: list[tuple[str, ...]] = []
    _check(module.body, paths)
    return Condition(source=text, tree=module.body, paths=tuple(dict.fromkeys(paths)))


def _lookup(arguments: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = arguments
    for part in path:
        if not isinstance(value, Mapping) or part not in value:
            raise _Missing(".".join(path))
        value = value[part]
    return value


def _eval(node: ast.expr, values: Mapping[tuple[str, ...], Any]) -> Any:
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            return all(_truth(_eval(v, values)) for v in node.values)
        return any(_truth(_eval(v, values)) for v in node.values)
    if isinstance(node, ast.UnaryOp):
        operand = _eval(node.operand, values)
        if isinstance(node.op, ast.Not):
            return not _truth(operand)
        if isinstance(operand, bool) or not isinstance(operand, int | float):
            raise TypeError("a sign needs a number")
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.Compare):
        left = _eval(node.left, values)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _eval(right_node, values)
            if not _compare(type(op), left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.List | ast.Tuple):
        return [_eval(e, values) for e in node.elts]
    path = _path_of(node)
    assert path is not None
    if len(path) == 1 and path[0].lower() in _LITERAL_NAMES:
        return _LITERAL_NAMES[path[0].lower()]
    return values[path]


def _truth(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError("'and', 'or' and 'not' need comparisons, not bare values")
    return value


def _kind(value: Any) -> str:
    """The condition language's type of a value; a number that is not finite has none (a type error)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            raise TypeError("a number that is not finite cannot be compared")
        return "number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list | tuple):
        for element in value:
            _kind(element)  # a non-finite number anywhere inside cannot be judged either
        return "list"
    if isinstance(value, Mapping):
        for element in value.values():
            _kind(element)
        return "object"
    raise TypeError(f"a {type(value).__name__} cannot be compared")


def _same_kind(left: Any, right: Any) -> None:
    """Raise unless ``left`` and ``right`` may be tested for equality: the same type, or one is null.

    Python would answer ``"60000" == 60000`` and ``True == 1`` without complaint, and a policy's
    ``amount == 60000`` would then be silently false for the string: a mismatch is a type error instead.
    """
    kinds = {_kind(left), _kind(right)}
    if len(kinds) > 1 and "null" not in kinds:
        raise TypeError("only values of the same type can be compared")


def _compare(op: type[ast.cmpop], left: Any, right: Any) -> bool:
    if op in (ast.Lt, ast.LtE, ast.Gt, ast.GtE):
        # Python would compare True with 1 and refuse only some mixes; be strict: numbers with numbers,
        # text with text, anything else (a NaN or an infinity too) is a type error (and so requires approval).
        kinds = {_kind(left), _kind(right)}
        if kinds not in ({"number"}, {"text"}):
            raise TypeError("only numbers with numbers or text with text can be ordered")
    elif op in (ast.Eq, ast.NotEq):
        _same_kind(left, right)
    elif isinstance(right, str):
        if not isinstance(left, str):
            raise TypeError("'in' text needs text on its left")
    elif isinstance(right, list):
        for element in right:
            _same_kind(left, element)
    else:
        raise TypeError("'in' needs a list or text on its right")
    return bool(_COMPARE[op](left, right))


def condition_requires_approval(source: str, arguments: Mapping[str, Any]) -> bool:
    """Whether a policy with condition ``source`` requires approval for ``arguments``.

    An empty condition always requires approval. A condition that cannot be parsed, names a missing
    argument or fails to evaluate also requires approval (fail closed).
    """
    if not (source or "").strip():
        return True
    try:
        return parse_condition(source).evaluate(arguments)
    except ConditionError:
        logger.warning("an approval-policy condition does not parse; approval is required")
        return True
    except _Missing:
        return True
    except Exception as exc:  # type errors and anything else: fail closed
        logger.info("an approval-policy condition could not be evaluated (%s)", type(exc).__name__)
        return True
