"""The registry's fast argument check agrees with jsonschema, and a failure is still explained by jsonschema.

Many random schemas of the covered shapes, each against many random arguments (most built to fit the
schema, then mutated): wherever the fast check is compiled, its verdict on plain JSON is jsonschema's.
"""

from __future__ import annotations

import json
import random
from decimal import Decimal
from typing import Any

from jsonschema import validators

from agents.engine.schema_fast_path import compile_fast_check
from agents.engine.tools import ArgumentProblem, FunctionTool, ToolRegistry

NAMES = ("q", "limit", "tags", "mode", "filter")
SCALARS = ("string", "integer", "number", "boolean", "null")
ODD_VALUES: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    1,
    -7,
    2**70,
    1.0,
    -3.0,
    1.5,
    float("nan"),
    float("inf"),
    "",
    "x",
    "fast",
    "slow",
    [],
    [1, "a"],
    {},
    {"q": "x"},
)


async def _noop(**kwargs: Any) -> str:
    return "ok"


def _scalar_schema(rng: random.Random) -> dict[str, Any]:
    roll = rng.random()
    if roll < 0.15:
        return {"enum": rng.sample(["fast", "slow", "x", ""], rng.randint(1, 3))}
    if roll < 0.3:
        return {"type": rng.sample(SCALARS, 2)}
    schema: dict[str, Any] = {"type": rng.choice(SCALARS)}
    if schema["type"] == "string" and rng.random() < 0.3:
        schema["enum"] = rng.sample(["fast", "slow", "x", ""], rng.randint(1, 3))
    if rng.random() < 0.3:
        schema["description"] = "a field"
    if schema["type"] == "string" and rng.random() < 0.2:
        schema["format"] = "date-time"
    return schema


def _schema(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    roll = rng.random()
    if depth > 0 and roll < 0.55:
        return _scalar_schema(rng)
    if depth > 0 and roll < 0.75:
        array: dict[str, Any] = {"type": "array"}
        if rng.random() < 0.8:
            array["items"] = (
                _scalar_schema(rng) if rng.random() < 0.7 or depth > 1 else _schema(rng, depth + 1)
            )
        return array
    if depth > 0 and roll < 0.8:
        return {} if rng.random() < 0.5 else {"description": "anything"}
    names = rng.sample(NAMES, rng.randint(0, 4))
    schema = {"type": "object", "properties": {n: _schema(rng, depth + 1) for n in names}}
    if rng.random() < 0.7:
        # sometimes a required name the properties leave out
        schema["required"] = rng.sample(names + ["other"], rng.randint(0, len(names)))
    if rng.random() < 0.6:
        schema["additionalProperties"] = rng.random() < 0.3
    return schema


def _fitting(rng: random.Random, schema: Any) -> Any:
    """A value meant to fit ``schema``, sometimes broken on purpose."""
    if rng.random() < 0.08:
        return rng.choice(ODD_VALUES)
    if not isinstance(schema, dict) or not schema.get("type") and "enum" not in schema:
        return rng.choice(ODD_VALUES)
    if "enum" in schema:
        return rng.choice(schema["enum"] + ["other"]) if rng.random() < 0.9 else rng.choice(ODD_VALUES)
    kind = schema["type"]
    if isinstance(kind, list):
        kind = rng.choice(kind)
    if kind == "object":
        value = {}
        for name, sub in schema.get("properties", {}).items():
            if name in schema.get("required", ()) or rng.random() < 0.6:
                value[name] = _fitting(rng, sub)
        if rng.random() < 0.15:
            value["extra"] = 1
        return value
    if kind == "array":
        return [_fitting(rng, schema.get("items", {})) for _ in range(rng.randint(0, 3))]
    return {
        "string": lambda: rng.choice(["", "q", "fast", "slow"]),
        "integer": lambda: rng.choice([0, 3, -2, 4.0, 2**64, True]),
        "number": lambda: rng.choice([0, 2.5, -1, float("nan"), False]),
        "boolean": lambda: rng.choice([True, False, 0, 1]),
        "null": lambda: rng.choice([None, 0, ""]),
    }[kind]()


def test_the_fast_check_gives_jsonschemas_verdict_for_many_schemas_and_arguments():
    rng = random.Random(22)
    compared = valid = 0
    for _ in range(400):
        schema = _schema(rng)
        fast = compile_fast_check(schema)
        assert fast is not None, schema  # every generated shape is a covered one
        validator = validators.validator_for(schema)(schema)
        for _ in range(40):
            args = _fitting(rng, schema)
            expected = validator.is_valid(args)
            assert fast(args) == expected, (schema, args)
            compared += 1
            valid += expected
    assert valid > compared // 5  # the inputs reach the valid side too, not only failures


def test_the_fast_check_never_passes_what_jsonschema_refuses_and_leaves_odd_values_to_it():
    schema = {
        "type": "object",
        "properties": {"n": {"type": "number"}, "tags": {"type": "array", "items": {"type": "string"}}},
    }
    fast = compile_fast_check(schema)
    assert fast is not None
    validator = validators.Draft202012Validator(schema)
    for args in ({"n": Decimal("1.5")}, {"tags": ("a", "b")}, {"n": True}, {"tags": ["a", 1]}):
        assert not fast(args)
        # a Decimal is a number to jsonschema: the registry then asks jsonschema, which passes it
        assert validator.is_valid(args) == (args == {"n": Decimal("1.5")})


def test_a_float_with_an_integral_value_is_an_integer_and_a_boolean_is_not():
    fast = compile_fast_check({"type": "object", "properties": {"n": {"type": "integer"}}})
    assert fast is not None
    assert fast({"n": 3}) and fast({"n": 3.0})
    assert not fast({"n": 3.5}) and not fast({"n": True}) and not fast({"n": float("inf")})


def test_shapes_the_fast_check_does_not_cover_are_left_to_jsonschema():
    for schema in (
        {"type": "object", "properties": {"q": {"type": "string", "minLength": 2}}},
        {"type": "object", "properties": {"q": {"$ref": "#/$defs/q"}}, "$defs": {"q": {"type": "string"}}},
        {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "object", "properties": {"n": {"enum": [1, 2]}}},
        {"properties": {"q": {"type": "string"}}},
    ):
        assert compile_fast_check(schema) is None, schema


def _registry(schema: dict[str, Any]) -> ToolRegistry:
    return ToolRegistry([FunctionTool("t", "A tool.", _noop, parameters=schema)])


def _jsonschema_problems(schema: dict[str, Any], args: Any) -> list[ArgumentProblem]:
    """The problems as the registry reported them before the fast check: from jsonschema alone, on the
    schema as the registry's cache compiles it (keys sorted, which orders errors at the same path)."""
    schema = json.loads(json.dumps(schema, sort_keys=True))
    validator = validators.validator_for(schema)(schema)
    return [
        ArgumentProblem(
            "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path), err.message
        )
        for err in sorted(validator.iter_errors(args), key=lambda e: list(e.absolute_path))
    ]


def test_the_registry_explains_invalid_arguments_with_jsonschemas_own_messages():
    rng = random.Random(7)
    explained = 0
    for _ in range(150):
        schema = _schema(rng)
        registry = _registry(schema)
        for _ in range(10):
            args = _fitting(rng, schema)
            if not isinstance(args, dict):
                continue
            problems = registry.validate("t", args)
            assert problems == _jsonschema_problems(schema, args), (schema, args)
            explained += bool(problems)
    assert explained > 50


def test_the_registry_passes_a_value_only_jsonschema_accepts():
    registry = _registry({"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]})
    assert registry.validate("t", {"n": Decimal("2")}) == []
    assert registry.validate("t", {"n": 2}) == []
    assert registry.validate("t", {"n": "2"}) == [ArgumentProblem("$.n", "'2' is not of type 'number'")]


def test_a_schema_of_an_older_draft_keeps_its_own_integer_semantics():
    schema = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"n": {"type": "integer"}},
    }
    problems = _registry(schema).validate("t", {"n": 1.0})
    assert problems == [ArgumentProblem("$.n", "1.0 is not of type 'integer'")]
    assert json.dumps(schema)  # plain JSON: compiled through the shared cache like any other
