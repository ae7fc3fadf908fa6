"""Approval-policy conditions: a small, safe expression language over a tool call's arguments.

A condition is written like a Python expression, for example ``amount > 50000 and currency == "CNY"``
or ``order.total >= 1000 or vendor.country not in ["CN", "HK"]``. It is parsed once with :mod:`ast`
into an allow-listed tree and evaluated by walking that tree; nothing is ever passed to ``eval``.

Allowed: comparisons (``== != < <= > >= in not in``, chained), ``and``/``or``/``not``, parentheses,
string/number/``true``/``false``/``null`` literals (Python spellings work too), lists of literals, argument
names and dotted lookups into nested objects (``order.total``). Anything else is a syntax error.

How values compare (each pair of a comparison on its own):

- Numbers compare exactly, as :class:`~decimal.Decimal` (a float is the decimal it prints as: ``0.1`` is
  0.1). A *decimal string* (``"18600.00"``, ``"-0.5"``: an optional minus, digits, an optional fraction;
  no exponent, sign ``+``, spaces or thousands separators) is a number when compared with a number or with
  another decimal string, so ``"10000.00" > 10000`` is false and ``"10000.01" > 10000`` true.
- A boolean is never a number (``true == 1`` cannot be judged).
- A string in ISO form, a date (``"2026-12-01"``) or a date and time (``"2026-12-01T10:00:00+08:00"``, a
  space instead of ``T`` also works), compares as a date (or an instant) with another one of the same kind.
  A date with a date-time, or a date-time with a time zone with one without, cannot be judged.
- Other strings compare as text.

Evaluation fails closed: a missing argument, values that cannot be compared (``"fifty"`` with ``10000``),
a number that is not finite (NaN, infinity) or any other error yield :class:`Unjudged`, which requires
approval and says why. ``null`` may be compared with anything by ``==`` and ``!=`` (``approver == null``).
"""

from __future__ import annotations

import ast
import logging
import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from enum import StrEnum
from functools import lru_cache
from typing import Any, ClassVar

logger = logging.getLogger(__name__)

MAX_CONDITION_CHARS = 1000
MAX_NODES = 200
MAX_DECIMAL_CHARS = 100
_LITERAL_NAMES = {"true": True, "false": False, "null": None, "none": None}
_ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)

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

DECIMAL_TEXT = re.compile(r"-?[0-9]+(\.[0-9]+)?")
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_ISO_DATETIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,6})?)?(Z|[+-][0-9]{2}:[0-9]{2})?"
)


class ConditionError(ValueError):
    """The condition text is not a valid condition (raised when parsing)."""


class Problem(StrEnum):
    """Why a condition could not be evaluated for a call."""

    MISSING = "missing"  # an argument the condition names is not in the call
    MISMATCH = "mismatch"  # two values of kinds that cannot be compared
    NOT_FINITE = "not_finite"  # NaN or an infinity
    DATE_AND_DATETIME = "date_and_datetime"  # a date with a date and time
    NAIVE_AND_AWARE = "naive_and_aware"  # a date-time with a time zone with one without
    NOT_A_COMPARISON = "not_a_comparison"  # a bare value where true or false is needed
    INVALID = "invalid"  # the stored condition does not parse
    ERROR = "error"  # anything else


@dataclass(frozen=True, slots=True)
class Matched:
    """The condition holds (or there is none: ``condition`` empty), so the call needs approval."""

    condition: str
    requires_approval: ClassVar[bool] = True


@dataclass(frozen=True, slots=True)
class NotMatched:
    """The condition is false for the call: no approval needed."""

    requires_approval: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class Unjudged:
    """The condition could not be evaluated, so the call needs approval (fail closed).

    ``argument`` is the dotted argument concerned (empty when none is), ``found`` the kind of its value and
    ``expected`` the kind it was compared with (see :func:`value_kind`)."""

    condition: str
    problem: Problem
    argument: str = ""
    found: str = ""
    expected: str = ""
    requires_approval: ClassVar[bool] = True


ConditionOutcome = Matched | NotMatched | Unjudged


class _CannotJudge(Exception):
    """Raised while evaluating; becomes an :class:`Unjudged` outcome."""

    def __init__(self, problem: Problem, found: str = "", expected: str = "", argument: str = "") -> None:
        super().__init__(problem)
        self.problem, self.found, self.expected, self.argument = problem, found, expected, argument


@dataclass(frozen=True, slots=True)
class Condition:
    """A parsed condition, safe to evaluate against any arguments."""

    source: str
    tree: ast.expr
    paths: tuple[tuple[str, ...], ...]

    def evaluate(self, arguments: Mapping[str, Any]) -> bool:
        """The condition's truth for ``arguments``; raises on a missing argument or values that cannot be
        compared (use :func:`evaluate_condition` for a typed outcome)."""
        values = {path: _lookup(arguments, path) for path in self.paths}
        return _truth(_eval(self.tree, values), "")


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
        elif isinstance(node.op, ast.USub | ast.UAdd) and _number_of(node.operand) is not None:
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


def _number_of(node: ast.AST) -> int | float | None:
    """The number a parsed node is a constant of (a bool is not one), else ``None``."""
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return node.value
    return None


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


class _Missing(LookupError):
    """An argument the condition names is not in the call's arguments."""


def _lookup(arguments: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = arguments
    for part in path:
        if not isinstance(value, Mapping) or part not in value:
            raise _Missing(".".join(path))
        value = value[part]
    return value


def argument_of(node: ast.expr) -> tuple[str, ...] | None:
    """The argument path a parsed node reads (``("order", "total")``), or ``None`` for anything else."""
    path = _path_of(node)
    if path is None or (len(path) == 1 and path[0].lower() in _LITERAL_NAMES):
        return None
    return path


def literal_of(node: ast.expr) -> tuple[bool, Any]:
    """``(True, value)`` when a parsed node is a literal (``-5``, ``"CNY"``, ``null``), else ``(False, None)``."""
    if isinstance(node, ast.Constant):
        return True, node.value
    if isinstance(node, ast.UnaryOp) and (number := _number_of(node.operand)) is not None:
        return True, -number if isinstance(node.op, ast.USub) else number
    path = _path_of(node)
    if path is not None and len(path) == 1 and path[0].lower() in _LITERAL_NAMES:
        return True, _LITERAL_NAMES[path[0].lower()]
    return False, None


def _label(node: ast.expr) -> str:
    """The dotted argument a node reads, or "" for a literal."""
    return ".".join(argument_of(node) or ())


def _eval(node: ast.expr, values: Mapping[tuple[str, ...], Any]) -> Any:
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            return all(_truth(_eval(v, values), _label(v)) for v in node.values)
        return any(_truth(_eval(v, values), _label(v)) for v in node.values)
    if isinstance(node, ast.UnaryOp):
        operand = _eval(node.operand, values)
        if isinstance(node.op, ast.Not):
            return not _truth(operand, _label(node.operand))
        return -operand if isinstance(node.op, ast.USub) else operand  # a number constant (see _check)
    if isinstance(node, ast.Compare):
        left, left_node = _eval(node.left, values), node.left
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _eval(right_node, values)
            try:
                holds = _compare(type(op), left, right)
            except _CannotJudge as exc:
                raise _named(exc, left_node, right_node) from None
            if not holds:
                return False
            left, left_node = right, right_node
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


def _named(exc: _CannotJudge, left_node: ast.expr, right_node: ast.expr) -> _CannotJudge:
    """Name the argument of a failed comparison: the left one, else the right one (kinds swapped)."""
    if _label(left_node):
        return _CannotJudge(exc.problem, exc.found, exc.expected, _label(left_node))
    return _CannotJudge(exc.problem, exc.expected, exc.found, _label(right_node))


def _truth(value: Any, label: str) -> bool:
    if not isinstance(value, bool):
        raise _CannotJudge(Problem.NOT_A_COMPARISON, value_kind(value), "bool", label)
    return value


def _finite(value: Any) -> None:
    """Raise for a non-finite number anywhere in ``value`` (it can be judged by nothing)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise _CannotJudge(Problem.NOT_FINITE, "number", "number")
    if isinstance(value, list | tuple):
        for element in value:
            _finite(element)
    elif isinstance(value, Mapping):
        for element in value.values():
            _finite(element)


def iso_value(text: str) -> date | datetime | None:
    """The date or date-time a string spells in ISO form, else ``None`` (also for impossible dates)."""
    try:
        if _ISO_DATE.fullmatch(text):
            return date.fromisoformat(text)
        if _ISO_DATETIME.fullmatch(text):
            return datetime.fromisoformat(text)
    except ValueError:
        return None
    return None


def is_decimal_text(text: str) -> bool:
    """Whether ``text`` is a decimal string that compares as a number (``"-1200.50"``)."""
    return len(text) <= MAX_DECIMAL_CHARS and DECIMAL_TEXT.fullmatch(text) is not None


def value_kind(value: Any) -> str:
    """The kind of a value as the condition language sees it: ``null``, ``bool``, ``number``,
    ``decimal_text`` (a decimal string), ``date``, ``datetime``, ``text``, ``list`` or ``object``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float | Decimal):
        return "number"
    if isinstance(value, str):
        if is_decimal_text(value):
            return "decimal_text"
        moment = iso_value(value)
        if moment is None:
            return "text"
        return "datetime" if isinstance(moment, datetime) else "date"
    if isinstance(value, list | tuple):
        return "list"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _number(value: Any) -> Decimal:
    # repr() is the shortest text that reads back as the same float: 0.1 is Decimal("0.1").
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)


def _comparable(left: Any, right: Any, ordering: bool) -> tuple[Any, Any]:
    """The two values in the form they compare in; raise :class:`_CannotJudge` when they cannot."""
    found, expected = value_kind(left), value_kind(right)
    kinds = {found, expected}
    if "null" in kinds and not ordering:
        return left, right
    if kinds <= {"number", "decimal_text"}:
        return _number(left), _number(right)
    if kinds & {"date", "datetime"}:
        if len(kinds) > 1:
            problem = Problem.DATE_AND_DATETIME if kinds == {"date", "datetime"} else Problem.MISMATCH
            raise _CannotJudge(problem, found, expected)
        a, b = iso_value(left), iso_value(right)
        if isinstance(a, datetime) and isinstance(b, datetime) and (a.tzinfo is None) != (b.tzinfo is None):
            raise _CannotJudge(Problem.NAIVE_AND_AWARE, found, expected)
        return a, b
    if kinds <= {"text", "decimal_text"}:
        if ordering and len(kinds) > 1:
            raise _CannotJudge(Problem.MISMATCH, found, expected)  # "50.00" < "abc" means nothing
        return left, right  # text with text; a decimal string is never equal to other text anyway
    if len(kinds) == 1 and not (ordering and found in ("null", "bool", "list", "object")):
        return left, right
    raise _CannotJudge(Problem.MISMATCH, found, expected)


def _compare(op: type[ast.cmpop], left: Any, right: Any) -> bool:
    _finite(left)
    _finite(right)
    if op in _ORDERING or op in (ast.Eq, ast.NotEq):
        a, b = _comparable(left, right, ordering=op in _ORDERING)
        return bool(_COMPARE[op](a, b))
    if isinstance(right, str) and value_kind(left) in ("text", "decimal_text", "date", "datetime"):
        return bool(_COMPARE[op](left, right))  # 'in' text is a substring test
    if isinstance(right, list):
        found = any(operator.eq(*_comparable(left, element, ordering=False)) for element in right)
        return found if op is ast.In else not found
    raise _CannotJudge(Problem.MISMATCH, value_kind(left), value_kind(right))


def evaluate_condition(source: str, arguments: Mapping[str, Any]) -> ConditionOutcome:
    """Whether a policy with condition ``source`` holds ``arguments`` for approval, and why.

    An empty condition always matches. A condition that cannot be parsed, names a missing argument or
    compares values that cannot be compared is :class:`Unjudged` (fail closed: approval required).
    """
    text = (source or "").strip()
    if not text:
        return Matched(condition="")
    try:
        condition = parse_condition(text)
        return Matched(condition=text) if condition.evaluate(arguments) else NotMatched()
    except ConditionError:
        logger.warning("an approval-policy condition does not parse; approval is required")
        return Unjudged(condition=text, problem=Problem.INVALID)
    except _Missing as exc:
        return Unjudged(condition=text, problem=Problem.MISSING, argument=str(exc))
    except _CannotJudge as exc:
        logger.info("an approval-policy condition could not be evaluated (%s)", exc.problem.value)
        return Unjudged(text, exc.problem, exc.argument, exc.found, exc.expected)
    except Exception as exc:  # anything else: fail closed
        logger.info("an approval-policy condition could not be evaluated (%s)", type(exc).__name__)
        return Unjudged(condition=text, problem=Problem.ERROR)


def condition_requires_approval(source: str, arguments: Mapping[str, Any]) -> bool:
    """Whether a policy with condition ``source`` requires approval for ``arguments`` (fail closed)."""
    return evaluate_condition(source, arguments).requires_approval
