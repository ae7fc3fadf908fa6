"""PlanAnalyzer through the scripted LLM: the verdict, its regex fallback, the safe default, the cut results."""

from __future__ import annotations

from agents.engine.llm import Usage
from agents.engine.model_registry import ModelRegistry
from agents.engine.plan.analyzer import PlanAnalyzer, regex_analysis
from agents.engine.plan.models import Analysis, Plan, PlanStep
from tests.engine import test_plan_support as support
from tests.engine.test_plan_support import ANALYZER, verdict
from tests.fakes.openai_server import call, error, text, tool_calls

registry = support.registry  # fixtures
script = support.script


def finished_plan(result: str = "ACME placed 3 orders") -> Plan:
    return Plan(
        goal="How many orders did ACME place?",
        steps=[
            PlanStep("1", "count ACME orders", status="done", result=result),
            PlanStep("2", "check returns", status="failed", error="timed out after 600 s"),
            PlanStep("3", "summarise", ["2"], status="failed", error="dependency 2 failed"),
        ],
    )


async def test_the_verdict_comes_from_one_structured_call_on_the_smart_model(registry, script):
    script.analyzer(verdict(True, 0.9, "the count is there", "ACME placed 3 orders."))
    usage = Usage()
    analysis = await PlanAnalyzer(registry).analyze(finished_plan(), usage=usage)
    assert analysis == Analysis(True, 0.9, "the count is there", "ACME placed 3 orders.")
    (request,) = script.requests
    assert (request.kind, request.model) == (ANALYZER, "smart-model")
    assert usage.calls == 1


async def test_the_analyser_sees_the_goal_and_every_step_with_its_status(registry, script):
    script.analyzer(verdict())
    await PlanAnalyzer(registry).analyze(finished_plan())
    prompt = script.requests[0].user()
    assert prompt.startswith("Goal:\nHow many orders did ACME place?")
    assert "### Step 1 [done]: count ACME orders\nACME placed 3 orders" in prompt
    assert "### Step 2 [failed]: check returns\n(not done: timed out after 600 s)" in prompt
    assert "### Step 3 [failed]: summarise\n(not done: dependency 2 failed)" in prompt


async def test_step_results_are_cut_to_ten_thousand_characters(registry, script):
    script.analyzer(verdict())
    long_result = "a" * 10000 + "TAIL" + "b" * 5000
    await PlanAnalyzer(registry).analyze(finished_plan(long_result))
    prompt = script.requests[0].user()
    assert "a" * 10000 + "… [cut: 5004 more characters]" in prompt
    assert "TAIL" not in prompt


async def test_loose_types_in_the_verdict_are_forgiven(registry, script):
    script.analyzer(
        tool_calls(call("judge_plan", {"achieved": "true", "confidence": "85", "reasoning": "ok"}))
    )
    analysis = await PlanAnalyzer(registry).analyze(finished_plan())
    assert (analysis.achieved, analysis.confidence, analysis.final_answer) == (True, 0.85, "")


async def test_plain_text_is_read_by_the_regex_fallback(make_llm, script):
    text_model = make_llm(model="smart-model", tool_call=False, json_mode=False)
    script.analyzer(
        text(
            "Achieved: yes\nConfidence: 70%\nReasoning: the count is there but returns are missing\n"
            "Final answer: ACME placed 3 orders."
        )
    )
    analysis = await PlanAnalyzer(ModelRegistry({"general": text_model})).analyze(finished_plan())
    assert analysis == Analysis(
        True, 0.7, "the count is there but returns are missing", "ACME placed 3 orders."
    )
    assert len(script.requests) == 1


def test_the_regex_fallback_reads_json_like_and_markdown_keys():
    assert regex_analysis('"achieved": false, "confidence": 0.4') == {
        "achieved": False,
        "confidence": 0.4,
        "reasoning": "",
        "final_answer": "",
    }
    found = regex_analysis("**Achieved**: true\n**Confidence**: 0.95")
    assert found is not None and (found["achieved"], found["confidence"]) == (True, 0.95)
    assert regex_analysis("I think it went well.") is None


async def test_unusable_output_gives_the_safe_default(make_llm, script):
    text_model = make_llm(model="smart-model", tool_call=False, json_mode=False)
    script.analyzer(text("It went fine, I suppose."), text("Really, it did."))
    analysis = await PlanAnalyzer(ModelRegistry({"general": text_model})).analyze(finished_plan())
    assert analysis == Analysis(achieved=False, confidence=0.0, reasoning="", final_answer="")
    assert len(script.requests) == 2


async def test_an_unreachable_model_gives_the_safe_default(registry, script):
    script.analyzer(*([error(503)] * 5))
    analysis = await PlanAnalyzer(registry).analyze(finished_plan())
    assert (analysis.achieved, analysis.confidence) == (False, 0.0)


async def test_confidence_is_kept_between_zero_and_one(registry, script):
    script.analyzer(tool_calls(call("judge_plan", {"achieved": False, "confidence": 250})))
    analysis = await PlanAnalyzer(registry).analyze(finished_plan())
    assert analysis.confidence == 1.0
