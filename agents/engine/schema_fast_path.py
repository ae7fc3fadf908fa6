"""A compiled check of tool arguments for the common shapes of parameter schema, ahead of jsonschema.

:func:`compile_fast_check` turns a schema of a shape it covers (an object of typed properties: string,
integer, number, boolean, null, arrays and objects of those, ``required``, ``additionalProperties``, string
``enum``) into a plain function that says whether an instance is valid, at a fraction of jsonschema's cost.
Any other schema gives ``None``: jsonschema alone decides.

The check is trusted only when it says "valid". "Invalid" sends the instance to jsonschema, which decides
and explains (so error messages are jsonschema's own). It therefore errs only on the side of "invalid":
values jsonschema would accept that are not plain JSON (a ``Decimal``, a ``tuple``...) go to jsonschema.

Semantics follow the drafts from 6 on (what ``validator_for`` picks for a schema without ``$schema`` is
2020-12): a boolean is not a number, a float with an integral value (``1.0``) is an integer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]

# Keywords that assert nothing here: annotations, and ``format`` (the registry's validators are built
# without a format checker, so jsonschema does not assert it either).
_ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "format",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$comment",
    }
)
_TOP_ONLY = frozenset({"$schema", "$id"})
_OBJECT_KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties"}) | _ANNOTATIONS
_ARRAY_KEYWORDS = frozenset({"type", "items"}) | _ANNOTATIONS
_SCALAR_KEYWORDS = frozenset({"type", "enum"}) | _ANNOTATIONS


def _is_string(value: Any) -> bool:
    return isinstance(value, str)


def _is_integer(value: Any) -> bool:
    kind = type(value)
    return kind is int or (kind is float and value.is_integer())


def _is_number(value: Any) -> bool:
    kind = type(value)
    return kind is int or kind is float


def _is_boolean(value: Any) -> bool:
    return value is True or value is False


def _is_null(value: Any) -> bool:
    return value is None


def _anything(value: Any) -> bool:
    return True


_SCALARS: Mapping[str, Check] = {
    "string": _is_string,
    "integer": _is_integer,
    "number": _is_number,
    "boolean": _is_boolean,
    "null": _is_null,
}


def compile_fast_check(schema: Any) -> Check | None:
    """The fast check of a tool's parameter schema, or ``None`` when its shape is not covered.

    The caller checks the draft: the check has the semantics of draft 6 and later (see the module docstring).
    """
    if not isinstance(schema, dict):
        return None
    body = {k: v for k, v in schema.items() if k not in _TOP_ONLY}
    if body.get("type") != "object":
        return None
    return _compile(body)


def _compile(schema: Any) -> Check | None:
    if schema is True:
        return _anything
    if not isinstance(schema, dict):
        return None
    if not schema.keys() - _ANNOTATIONS:
        return _anything
    kind = schema.get("type")
    if kind == "object":
        return _compile_object(schema)
    if kind == "array":
        return _compile_array(schema)
    return _compile_scalar(schema)


def _compile_scalar(schema: dict[str, Any]) -> Check | None:
    if schema.keys() - _SCALAR_KEYWORDS:
        return None
    kind = schema.get("type")
    if isinstance(kind, str):
        type_check = _SCALARS.get(kind)
    elif isinstance(kind, list) and kind and all(isinstance(k, str) and k in _SCALARS for k in kind):
        checks = tuple(_SCALARS[k] for k in dict.fromkeys(kind))

        def type_check(value: Any) -> bool:
            return any(check(value) for check in checks)

    elif kind is None and "enum" in schema:
        type_check = _anything
    else:
        return None
    if type_check is None:
        return None
    if "enum" not in schema:
        return type_check
    enum = schema["enum"]
    # Only strings: jsonschema's enum equality (1 == 1.0, True != 1, deep comparison) stays its own.
    if not isinstance(enum, list) or not enum or not all(isinstance(e, str) for e in enum):
        return None
    allowed = frozenset(enum)
    typed = type_check

    def enum_check(value: Any) -> bool:
        return isinstance(value, str) and value in allowed and typed(value)

    return enum_check


def _compile_array(schema: dict[str, Any]) -> Check | None:
    if schema.keys() - _ARRAY_KEYWORDS:
        return None
    if "items" not in schema:
        return lambda value: isinstance(value, list)
    item = _compile(schema["items"])
    if item is None:
        return None
    if item is _anything:
        return lambda value: isinstance(value, list)

    def array_check(value: Any) -> bool:
        if not isinstance(value, list):
            return False
        for element in value:
            if not item(element):
                return False
        return True

    return array_check


def _compile_object(schema: dict[str, Any]) -> Check | None:
    if schema.keys() - _OBJECT_KEYWORDS:
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    additional = schema.get("additionalProperties", True)
    if not isinstance(properties, dict) or not isinstance(required, list):
        return None
    if not all(isinstance(name, str) for name in required) or (
        additional is not True and additional is not False
    ):
        return None
    checks: dict[str, Check] = {}
    for name, sub in properties.items():
        check = _compile(sub)
        if check is None:
            return None
        if check is not _anything:
            checks[name] = check
    required_names = tuple(dict.fromkeys(required))
    closed = additional is False
    known = frozenset(properties)

    def object_check(value: Any) -> bool:
        if not isinstance(value, dict):
            return False
        for name in required_names:
            if name not in value:
                return False
        if closed and not known.issuperset(value):
            return False
        for name, check in checks.items():
            if name in value and not check(value[name]):
                return False
        return True

    return object_check


__all__ = ["Check", "compile_fast_check"]
