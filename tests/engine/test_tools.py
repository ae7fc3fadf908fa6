"""Tools, results, artifacts and the registry."""

from __future__ import annotations

import json

import pytest

from agents.engine.tool_context import ToolCallContext
from agents.engine.tools import (
    Artifact,
    FunctionTool,
    ToolRegistry,
    ToolResult,
    coerce_result,
    unknown_tool_observation,
)
from tests.engine.doubles import QUERY_SCHEMA, RecordingTool


def test_registry_keeps_registration_order_and_finds_tools_by_name():
    a, b = RecordingTool("alpha"), RecordingTool("beta")
    registry = ToolRegistry([a, b])
    assert registry.names() == ["alpha", "beta"]
    assert registry.get("beta") is b
    assert registry.get("gamma") is None
    assert "alpha" in registry and len(registry) == 2


def test_registering_a_duplicate_name_is_refused():
    registry = ToolRegistry([RecordingTool("alpha")])
    with pytest.raises(ValueError, match="already registered"):
        registry.register(RecordingTool("alpha"))


def test_an_invalid_parameters_schema_is_refused_at_registration():
    with pytest.raises(ValueError, match="invalid parameters schema"):
        ToolRegistry([RecordingTool("bad", parameters={"type": "no-such-type"})])


def test_an_invalid_schema_is_refused_every_time_it_is_registered():
    for _ in range(2):  # compiled schemas are shared across registries; a refusal must not be
        with pytest.raises(ValueError, match="invalid parameters schema"):
            ToolRegistry([RecordingTool("bad", parameters={"type": "no-such-type"})])


def test_registries_of_the_same_schema_validate_arguments_alike():
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    first = ToolRegistry([RecordingTool("count", parameters=schema)])
    second = ToolRegistry([RecordingTool("count", parameters=dict(reversed(list(schema.items()))))])
    for registry in (first, second):
        assert registry.validate("count", {"n": 3}) == []
        assert [p.path for p in registry.validate("count", {"n": "three"})] == ["$.n"]
        assert registry.validate("count", {}) != []


def test_openai_schemas_are_built_once_and_rebuilt_after_a_registration():
    registry = ToolRegistry([RecordingTool("alpha")])
    first = registry.openai_schemas()
    assert registry.openai_schemas() is first
    assert first == [
        {
            "type": "function",
            "function": {
                "name": "alpha",
                "description": "Search the knowledge base.",
                "parameters": QUERY_SCHEMA,
            },
        }
    ]
    registry.register(RecordingTool("beta"))
    assert [s["function"]["name"] for s in registry.openai_schemas()] == ["alpha", "beta"]


def test_compact_catalogue_has_one_line_of_at_most_about_80_characters_per_tool():
    long = RecordingTool("reporting", description="Build a long report " * 20 + "\nsecond line never shown")
    registry = ToolRegistry([RecordingTool("alpha"), long])
    lines = registry.catalogue().splitlines()
    assert lines[0] == "- alpha: Search the knowledge base."
    assert len(lines) == 2
    assert all(len(line) <= 82 for line in lines)  # "- " + at most 80 characters
    assert "second line" not in registry.catalogue()
    assert "properties" not in registry.catalogue()  # no parameter schemas


def test_subset_keeps_only_named_tools_in_the_given_order_and_ignores_unknown_names():
    registry = ToolRegistry([RecordingTool("alpha"), RecordingTool("beta"), RecordingTool("gamma")])
    subset = registry.subset(["gamma", "nope", "alpha", "gamma"])
    assert subset.names() == ["gamma", "alpha"]
    assert subset.validate("alpha", {"q": 1})  # validators come along


def test_validation_reports_each_problem_with_its_path():
    registry = ToolRegistry([RecordingTool("alpha")])
    assert registry.validate("alpha", {"q": "ok"}) == []
    problems = registry.validate("alpha", {"q": 3, "extra": True})
    assert [p.path for p in problems] == ["$", "$.q"]
    assert "3 is not of type 'string'" in problems[1].message


def test_unknown_tool_observation_lists_the_available_tools():
    text = unknown_tool_observation("serch", ["search", "fetch"])
    assert "serch" in text and "search, fetch" in text


def test_rich_artifacts_reach_the_model_only_as_a_summary_line():
    html = "<html><body>" + "x" * 5000 + "</body></html>"
    result = ToolResult(content=html, artifacts=(Artifact("report.html", "text/html", html),))
    assert result.observation == (
        "[Artifact generated: report.html] The content is rendered as a preview in the UI. "
        "Do not repeat it in your answer; refer to it by name."
    )
    markdown = ToolResult(
        content="Wrote the summary.", artifacts=(Artifact("notes.md", "text/markdown", "# big"),)
    )
    assert markdown.observation.startswith("Wrote the summary.\n[Artifact generated: notes.md]")
    assert "# big" not in markdown.observation


def test_other_artifacts_are_named_but_not_inlined():
    result = ToolResult(content="done", artifacts=(Artifact("data.csv", "text/csv", "a,b\n1,2"),))
    assert "[Artifact generated: data.csv]" in result.observation
    assert "a,b" not in result.observation


def test_failure_results_carry_the_error_flag_and_message():
    result = ToolResult.failure("disk full")
    assert result.is_error and result.error == "disk full"
    assert result.content == "Error: disk full"


def test_execute_return_values_are_normalised_to_tool_results():
    assert coerce_result("plain").content == "plain"
    assert coerce_result(None).content == ""
    assert json.loads(coerce_result({"rows": [1, 2]}).content) == {"rows": [1, 2]}
    same = ToolResult(content="x")
    assert coerce_result(same) is same


async def test_function_tool_calls_its_function_with_the_arguments():
    async def add(a: int, b: int) -> str:
        return str(a + b)

    tool = FunctionTool("add", "Add two numbers.", add, parameters={"type": "object"}, timeout=5)
    assert await tool.execute(ToolCallContext("add", "c1"), a=2, b=3) == "5"
    assert tool.timeout == 5
