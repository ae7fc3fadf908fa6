"""model_hint routing: the scripted server sees which model each plan-mode call asked for.

Planner and analyser -> smart; history summary -> fast; each step -> the model of its hint (general when
it has none); answer synthesis -> general.
"""

from __future__ import annotations

from agents.engine.plan.agent import PlanAgent
from tests.engine import test_plan_support as support
from tests.engine.doubles import registry_of
from tests.engine.test_plan_support import (
    ANALYZER,
    PLANNER,
    STEP,
    SUMMARY,
    SYNTHESIS,
    plan_reply,
    step,
    verdict,
)
from tests.fakes.openai_server import text

registry = support.registry  # fixtures
script = support.script


async def test_every_call_of_a_plan_run_goes_to_the_model_of_its_role(registry, script):
    script.summary(text("The user asked about ACME before."))
    script.planner(
        plan_reply(
            step("quick", "list the customers", model_hint="fast"),
            step("deep", "find the anomaly", model_hint="reasoning"),
            step("write", "write it up", ["quick", "deep"], model_hint="smart"),
            step("plain", "anything else"),
        )
    )
    for step_id in ("quick", "deep", "write", "plain"):
        script.step(step_id, text(f"{step_id} done"))
    script.analyzer(verdict(True, 1.0, "", "all done"))
    script.synthesis(text("The answer."))
    history = [{"role": "user", "content": "earlier " * 1000}]
    plan_agent = PlanAgent(registry, registry_of())

    await plan_agent.stream_synthesize(await plan_agent.run("Find the anomaly", history=history))

    models = {(r.kind, r.step_id): r.model for r in script.requests}
    assert models == {
        (SUMMARY, None): "fast-model",
        (PLANNER, None): "smart-model",
        (STEP, "quick"): "fast-model",
        (STEP, "deep"): "reasoning-model",
        (STEP, "write"): "smart-model",
        (STEP, "plain"): "general-model",
        (ANALYZER, None): "smart-model",
        (SYNTHESIS, None): "general-model",
    }


async def test_a_hint_for_an_unconfigured_role_uses_the_general_model(make_llm, script):
    from agents.engine.model_registry import ModelRegistry

    registry = ModelRegistry({"general": make_llm(model="general-model"), "reasoning": None})
    script.planner(plan_reply(step("1", "think hard", model_hint="reasoning"), step("2", "x")))
    script.step("1", text("ok")).step("2", text("ok"))
    script.analyzer(verdict(True, 1.0, "", "ok"))
    await PlanAgent(registry, registry_of()).run("goal")
    assert {r.model for r in script.requests} == {"general-model"}
