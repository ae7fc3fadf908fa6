"""Plan mode building blocks: the model registry, plan normalisation and the cycle check (no model calls)."""

from __future__ import annotations

import pytest

from agents.engine.model_registry import ModelRegistry
from agents.engine.plan.graph import raw_step_list, steps_from_raw, topological_order
from agents.engine.plan.models import PlanStep, PlanValidationError, id_order
from tests.engine.doubles import FakeLLM


class Named(FakeLLM):
    def __init__(self, model: str) -> None:
        super().__init__()
        self.model = model


# --- ModelRegistry ------------------------------------------------------------------------------


def test_registry_needs_a_general_model():
    with pytest.raises(ValueError, match="general"):
        ModelRegistry({"smart": Named("s")})


def test_registry_gives_each_role_its_model_and_falls_back_to_general():
    general, smart = Named("general-m"), Named("smart-m")
    registry = ModelRegistry({"general": general, "smart": smart, "fast": None})
    assert registry.get("smart") is smart
    assert registry.get(" SMART ") is smart
    for role in ("fast", "reasoning", "unknown", "", None):  # empty, unknown or unconfigured -> general
        assert registry.get(role) is general
    assert registry.roles() == {
        "general": "general-m",
        "fast": "general-m",
        "smart": "smart-m",
        "reasoning": "general-m",
    }


def test_registry_ignores_unknown_role_names():
    general = Named("g")
    registry = ModelRegistry({"general": general, "turbo": Named("t")})
    assert registry.get("turbo") is general


# --- normalisation ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        {"steps": [{"id": "1", "task": "a"}, {"id": "2", "task": "b"}]},
        [{"id": "1", "task": "a"}, {"id": "2", "task": "b"}],
        {"plan": {"steps": [{"id": "1", "task": "a"}, {"id": "2", "task": "b"}]}},
        {"steps": '[{"id": "1", "task": "a"}, {"id": "2", "task": "b"}]'},
        {"1": {"task": "a"}, "2": {"task": "b"}},
    ],
    ids=["steps", "bare-list", "nested", "json-string", "keyed-by-id"],
)
def test_step_lists_are_recovered_from_the_shapes_models_use(raw):
    assert [(s.id, s.task) for s in steps_from_raw(raw)] == [("1", "a"), ("2", "b")]


def test_a_bare_step_object_is_a_one_step_plan():
    (only,) = steps_from_raw({"id": "x", "task": "look it up", "dependencies": []})
    assert (only.id, only.task) == ("x", "look it up")


def test_ids_are_normalised_to_unique_strings():
    steps = steps_from_raw(
        {
            "steps": [
                {"id": 1, "task": "a"},
                {"id": 1, "task": "b"},
                {"task": "c"},
                {"id": "  s  4 ", "task": "d", "dependencies": [1, "s 4"]},
            ]
        }
    )
    assert [s.id for s in steps] == ["1", "1-2", "3", "s 4"]
    assert steps[3].dependencies == ["1"]  # a repeated id means its first holder; self-dependency pruned


def test_dangling_dependencies_are_pruned():
    steps = steps_from_raw(
        {"steps": [{"id": "1", "task": "a"}, {"id": "2", "task": "b", "dependencies": ["1", "99", "1"]}]}
    )
    assert steps[1].dependencies == ["1"]


def test_dependencies_given_as_a_comma_separated_string_are_read():
    steps = steps_from_raw(
        {
            "steps": [
                {"id": "a", "task": "x"},
                {"id": "b", "task": "y"},
                {"id": "c", "task": "z", "dependencies": "a, b"},
            ]
        }
    )
    assert steps[2].dependencies == ["a", "b"]


def test_hints_are_kept_only_when_they_name_a_tool_or_a_role():
    steps = steps_from_raw(
        {
            "steps": [
                {"id": "1", "task": "a", "tool_hint": "search", "model_hint": "Fast"},
                {"id": "2", "task": "b", "tool_hint": "teleport", "model_hint": "gpt-9"},
            ]
        },
        tool_names={"search"},
    )
    assert [(s.tool_hint, s.model_hint) for s in steps] == [("search", "fast"), (None, None)]


def test_a_plan_without_any_task_is_invalid():
    assert raw_step_list({"answer": 42}) == []
    with pytest.raises(PlanValidationError, match="no step"):
        steps_from_raw({"steps": [{"id": "1"}, "nonsense"]})


# --- Kahn's algorithm ---------------------------------------------------------------------------


def test_topological_order_respects_dependencies_and_breaks_ties_in_id_order():
    steps = [
        PlanStep("10", "j", ["2"]),
        PlanStep("2", "b"),
        PlanStep("1", "a"),
        PlanStep("3", "c", ["1", "2"]),
    ]
    assert topological_order(steps) == ["1", "2", "3", "10"]


def test_a_dependency_cycle_is_rejected_naming_the_blocked_steps():
    steps = [
        PlanStep("1", "a", ["3"]),
        PlanStep("2", "b", ["1"]),
        PlanStep("3", "c", ["2"]),
        PlanStep("4", "d"),
    ]
    with pytest.raises(PlanValidationError, match="cycle: steps 1, 2, 3 can never start"):
        topological_order(steps)


def test_ids_sort_naturally():
    assert sorted(["s10", "s2", "10", "2", "b", "a"], key=id_order) == ["2", "10", "a", "b", "s2", "s10"]


def test_plan_mode_imports_no_django():
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    check = (
        "import sys, agents.engine.plan, agents.engine.plan.agent, agents.engine.plan.router\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('django'))\n"
        "assert not loaded, loaded\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)}
    completed = subprocess.run(
        [sys.executable, "-c", check], cwd=root, env=env, capture_output=True, text=True, timeout=60
    )
    assert completed.returncode == 0, completed.stderr


def test_plan_mode_api_is_re_exported_from_the_engine_package():
    import agents.engine as engine

    for name in (
        "ModelRegistry",
        "PlanStep",
        "Plan",
        "PlanValidationError",
        "Planner",
        "PlanExecutor",
        "Analysis",
        "PlanAnalyzer",
        "PlanAgent",
        "PlanResult",
        "route_execution_mode",
    ):
        assert hasattr(engine, name), name
