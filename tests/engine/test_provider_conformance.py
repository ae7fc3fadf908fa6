"""Issue #16's acceptance: the same ReAct run and the same plan-mode run against every provider profile of the
scripted server, through the real ``openai`` SDK, end with the same events and the same answer, and every quirk
each profile injects is exercised (``server.quirks``): the test fails if a profile stops injecting one.

The LLM is configured for each profile as an admin would (its abilities, Azure's key header and api-version),
so none of the refusals a profile documents is triggered; a second parametrisation leaves the abilities at
their defaults for the profiles whose refusals the engine degrades from (helper B's fallbacks), and checks that
the refusal happened and the run still ends with the answer (or, for a streamed-only model, fails naming the
setting).

A ReAct run makes two tool calls: one parallel pair where the profile supports parallel calls, else one call a
turn; then its answer is streamed. Each run is compared with the same run against the profile-free server
(OpenAI's plain behaviour).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import date
from typing import Any

import pytest

from agents.engine.llm import OpenAICompatibleLLM
from agents.engine.model_registry import ModelRegistry
from agents.engine.plan.agent import PlanAgent
from agents.engine.react import ReActAgent
from tests.engine.doubles import EventLog, RecordingTool, registry_of
from tests.engine.test_plan_support import SYNTHESIS, PlanScript, classify, step
from tests.fakes.openai_server import Reply, call, text, tool_calls
from tests.fakes.provider_profiles import (
    AZURE_OPENAI,
    AZURE_PARALLEL_FIELD_REFUSAL,
    PROFILES,
    ProviderProfile,
    profile_named,
)

QUESTION = "ACME's orders and invoices?"
ANSWER = "ACME has 3 orders and 3 invoices."
ORDERS = {"q": "acme"}
INVOICES = {"q": "acme 2024"}

#: The refusals a profile documents: an engine configured with the profile's abilities triggers none.
REFUSALS = frozenset(
    {
        "stream_only_refused",
        "auth_header_refused",
        "query_refused",
        "tool_choice_refused",
        "auto_tool_choice_refused",
        "json_word_refused",
        "json_mode_refused",
        "max_tokens_refused",
        "reasoning_back_refused",
    }
)


@dataclass(frozen=True)
class Expected:
    """The quirks a profile injects in a run: ``always`` (the streamed answer, reasoning), ``native`` (replies
    with tool calls), ``streamed_tools`` (tool calls streamed, when ``chat()`` streams)."""

    always: frozenset[str]
    native: frozenset[str] = frozenset()
    streamed_tools: frozenset[str] = frozenset()


def _e(always: str, native: str = "", streamed_tools: str = "") -> Expected:
    return Expected(*(frozenset(s.split()) for s in (always, native, streamed_tools)))


EXPECTED: dict[str, Expected] = {
    "openai": _e("usage_empty_choices_chunk", "", "tool_id_first_only"),
    "azure-openai": _e("prompt_filter_chunk usage_empty_choices_chunk", "", "tool_id_first_only"),
    "deepseek": _e(
        "reasoning_sent usage_empty_choices_chunk", "reasoning_back_accepted", "tool_id_first_only"
    ),
    "qwen-dashscope": _e(
        "reasoning_sent usage_empty_choices_chunk", "parallel_reduced_to_one tool_id_first_only"
    ),
    "glm-zhipu": _e("reasoning_sent usage_in_last_chunk", "", "tool_arguments_whole"),
    "kimi-moonshot": _e(
        "reasoning_sent usage_in_choice",
        "reasoning_back_accepted",
        "tool_delta_without_index tool_id_first_only",
    ),
    "doubao-ark": _e("reasoning_sent usage_empty_choices_chunk", "", "tool_id_first_only"),
    "vllm": _e("usage_empty_choices_chunk", "content_empty_with_tool_calls", "tool_id_first_only"),
    "vllm-no-tool-parser": _e("usage_empty_choices_chunk"),
    "sglang": _e(
        "reasoning_sent usage_empty_choices_chunk", "content_empty_with_tool_calls", "tool_id_first_only"
    ),
    "ollama": _e(
        "reasoning_sent usage_empty_choices_chunk",
        "finish_stop_with_tool_calls",
        "tool_delta_index_reused tool_arguments_whole",
    ),
}


def test_every_profile_has_its_expected_quirks():
    assert set(EXPECTED) == {p.name for p in PROFILES}


# --- the runs ------------------------------------------------------------------------------------


def act(name: str, args: dict[str, Any]) -> str:
    return json.dumps(
        {"reasoning": "look it up", "action": {"type": "tool_call", "tool_name": name, "tool_args": args}}
    )


def final(answer: str) -> str:
    return json.dumps({"reasoning": "done", "action": {"type": "final_answer", "answer": answer}})


def react_script(*, native: bool, pair: bool, reference: bool) -> list[Reply]:
    """The model's side of the ReAct run. ``pair``: the profile returns both calls in one reply; else the
    model asks for both (the profile returns the first) and then for the second. The reference server
    (no profile) gets one call a turn for a profile that returns one."""
    if not native:
        return [
            text(act("orders", ORDERS)),
            text(act("invoices", INVOICES)),
            text(final("3 and 3")),
            text(ANSWER),
        ]
    orders, invoices = call("orders", ORDERS, id="c1"), call("invoices", INVOICES, id="c2")
    if pair:
        turns = [tool_calls(orders, invoices)]
    else:
        turns = [tool_calls(orders) if reference else tool_calls(orders, invoices), tool_calls(invoices)]
    return [*turns, text("3 orders, 3 invoices"), text(ANSWER)]


@dataclass(frozen=True)
class Outcome:
    stop_reason: str
    answer: str
    streamed: str
    labels: tuple[str, ...]
    calls: tuple[tuple[str, ...], ...]
    error: str | None


async def react_run(llm: Any) -> Outcome:
    orders, invoices = RecordingTool("orders"), RecordingTool("invoices")
    agent = ReActAgent(llm, registry_of(orders, invoices), completion_check=False)
    log = EventLog()
    result = await agent.run(QUESTION, on_event=log)
    answer = await agent.stream_answer(result, on_event=log)
    return _outcome(result.stop_reason, answer, log, (orders, invoices))


def _outcome(stop_reason: str, answer: str, log: EventLog, tools: tuple[RecordingTool, ...]) -> Outcome:
    streamed = "".join(e["content"] for e in log.of("answer") if e.get("status") == "delta")
    calls = tuple((t.name, *(json.dumps(c, sort_keys=True) for c in t.calls)) for t in tools)
    assert len(log.of("done")) == 1
    error = next((s["error"] for s in log.steps("thinking", "done") if s.get("error")), None)
    return Outcome(stop_reason, answer, streamed, tuple(log.labels()), calls, error)


def reference_llm(server: Any, profile: ProviderProfile, abilities: dict[str, bool]) -> OpenAICompatibleLLM:
    """The same endpoint settings against the profile-free server (OpenAI's plain behaviour)."""
    server.profile = None
    plain = {**abilities, "stream_only": False}
    return OpenAICompatibleLLM(
        base_url=f"{server.address}/v1",
        api_key="sk-ref",
        model="scripted-model",
        abilities=plain,
        max_retries=0,
    )


def react_cases() -> list[Any]:
    cases = []
    for profile in PROFILES:
        native = profile.abilities["tool_call"]
        if native:
            cases.append(pytest.param(profile, "native", False, id=f"{profile.name}-native"))
            if not profile.abilities["stream_only"]:
                cases.append(pytest.param(profile, "native", True, id=f"{profile.name}-native-streamed"))
        cases.append(
            pytest.param(profile, "json", profile.abilities["stream_only"], id=f"{profile.name}-json")
        )
    return cases


def expected_quirks(profile: ProviderProfile, *, native: bool, streamed: bool) -> frozenset[str]:
    expected = EXPECTED[profile.name]
    quirks = set(expected.always)
    if native:
        quirks |= expected.native
        if streamed:
            quirks |= expected.streamed_tools
    return frozenset(quirks)


@pytest.mark.parametrize(("profile", "mode", "streamed"), react_cases())
async def test_the_same_react_run_against_every_provider(
    scripted_llm, make_profile_llm, profile, mode, streamed
):
    native = mode == "native"
    pair = profile.abilities["parallel_tool_calls"]
    abilities = {"tool_call": native, "stream_only": streamed or profile.abilities["stream_only"]}
    settings = {**profile.abilities, **abilities}

    scripted_llm.script(*react_script(native=native, pair=pair, reference=True))
    reference = await react_run(reference_llm(scripted_llm, profile, settings))
    scripted_llm.reset()
    llm = make_profile_llm(profile, abilities=abilities)
    scripted_llm.script(*react_script(native=native, pair=pair, reference=False))
    outcome = await react_run(llm)

    assert outcome == reference
    assert (outcome.stop_reason, outcome.answer, outcome.streamed) == ("final_answer", ANSWER, ANSWER)
    assert outcome.calls == (("orders", json.dumps(ORDERS)), ("invoices", json.dumps(INVOICES)))
    exercised = {q for q, n in scripted_llm.quirks.items() if n}
    expected = expected_quirks(profile, native=native, streamed=abilities["stream_only"])
    assert expected <= exercised, f"{profile.name} no longer injects {sorted(expected - exercised)}"
    assert not exercised & REFUSALS, f"{profile.name} refused {sorted(exercised & REFUSALS)}"


# --- plan mode -----------------------------------------------------------------------------------


class AnyTransportPlanScript(PlanScript):
    """:class:`PlanScript` whose senders are told apart for streamed-only endpoints too (every request
    streamed: the synthesis is the one no other sender's prompt matches), and whose replies are intents
    written the way the request asks for them (a function call when tools are offered, JSON text else)."""

    def __call__(self, body: dict[str, Any]) -> Reply:
        kind, step_id = classify({**body, "stream": False})
        if kind == "unknown":
            kind = SYNTHESIS
        with self._lock:
            queue = self._queues.get((kind, step_id))
            intent = queue.popleft() if queue else None
        if intent is None:
            return text(f"nothing scripted for {kind} {step_id or ''}")
        return written(intent, body)


def written(intent: tuple[str, Any, Any], body: dict[str, Any]) -> Reply:
    """A structured answer, a tool call or a final text, in the form the request asks for."""
    kind, name, value = intent
    offered = {t["function"]["name"] for t in body.get("tools") or ()}
    if kind == "structured":
        return tool_calls(call(name, value)) if name in offered else text(json.dumps(value))
    if kind == "tool":
        return tool_calls(call(name, value)) if offered else text(act(name, value))
    return text(value) if offered or kind == "text" else text(final(value))


def plan_script() -> AnyTransportPlanScript:
    script = AnyTransportPlanScript()
    script.planner(
        (
            "structured",
            "make_plan",
            {
                "steps": [
                    step("1", "find orders", tool_hint="orders"),
                    step("2", "find invoices", ["1"], tool_hint="invoices"),
                ]
            },
        )
    )
    script.step("1", ("tool", "orders", ORDERS), ("answer", None, "3 orders"))
    script.step("2", ("tool", "invoices", INVOICES), ("answer", None, "3 invoices"))
    verdict = {"achieved": True, "confidence": 0.9, "reasoning": "complete", "final_answer": ANSWER}
    script.analyzer(("structured", "judge_plan", verdict))
    script.synthesis(("text", None, ANSWER))
    return script


async def plan_run(llm: Any) -> Outcome:
    orders, invoices = RecordingTool("orders"), RecordingTool("invoices")
    agent = PlanAgent(
        ModelRegistry.single(llm), registry_of(orders, invoices), today=lambda: date(2025, 3, 14)
    )
    log = EventLog()
    result = await agent.run("Compare ACME's orders with its invoices", on_event=log)
    answer = await agent.stream_synthesize(result, on_event=log)
    return _outcome(result.stop_reason, answer, log, (orders, invoices))


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
async def test_the_same_plan_mode_run_against_every_provider(scripted_llm, make_profile_llm, profile):
    reference_script = plan_script()
    scripted_llm.script(*([reference_script] * 40))
    reference = await plan_run(reference_llm(scripted_llm, profile, dict(profile.abilities)))
    scripted_llm.reset()
    llm = make_profile_llm(profile)
    script = plan_script()
    scripted_llm.script(*([script] * 40))
    outcome = await plan_run(llm)

    assert outcome == reference
    assert (outcome.stop_reason, outcome.answer) == ("achieved", ANSWER)
    assert outcome.calls == (("orders", json.dumps(ORDERS)), ("invoices", json.dumps(INVOICES)))
    exercised = {q for q, n in scripted_llm.quirks.items() if n}
    expected = EXPECTED[profile.name].always
    assert expected <= exercised, f"{profile.name} no longer injects {sorted(expected - exercised)}"
    assert not exercised & REFUSALS, f"{profile.name} refused {sorted(exercised & REFUSALS)}"


# --- abilities left at their defaults: the engine degrades from each refusal ------------------------------


DEGRADED = [
    pytest.param("glm-zhipu", "plan", "tool_choice_refused", id="glm-forced-tool-choice"),
    pytest.param("kimi-moonshot", "plan", "tool_choice_refused", id="kimi-forced-tool-choice"),
    pytest.param("doubao-ark", "json", "json_mode_refused", id="doubao-json-mode-react"),
    pytest.param("vllm-no-tool-parser", "native", "tool_calls_as_text", id="vllm-tool-calls-as-text"),
    pytest.param("qwen-dashscope", "native", "parallel_reduced_to_one", id="qwen-parallel-off"),
]


@pytest.mark.parametrize(("name", "mode", "quirk"), DEGRADED)
async def test_with_default_abilities_the_engine_degrades_from_each_refusal(
    scripted_llm, make_profile_llm, name, mode, quirk
):
    profile = profile_named(name)
    defaults = {k: True for k in ("tool_call", "parallel_tool_calls", "json_mode", "forced_tool_choice")}
    # streamed-only is a transport, not a refusal to degrade from: it stays as configured (see below)
    llm = make_profile_llm(profile, abilities={**defaults, "tool_call": mode != "json"})
    if mode == "plan":
        scripted_llm.script(*([plan_script()] * 40))
        outcome = await plan_run(llm)
        assert (outcome.stop_reason, outcome.answer) == ("achieved", ANSWER)
    else:
        # the model asks for both calls at once; a profile returning one gets asked again for the other
        pair = profile.parallel == "yes"
        scripted_llm.script(*react_script(native=mode == "native", pair=pair, reference=False))
        outcome = await react_run(llm)
        assert (outcome.stop_reason, outcome.answer) == ("final_answer", ANSWER)
    assert outcome.calls == (("orders", json.dumps(ORDERS)), ("invoices", json.dumps(INVOICES)))
    assert scripted_llm.quirks[quirk] >= 1


async def test_an_azure_deployment_refusing_parallel_tool_calls_gets_the_calls_without_the_field(
    scripted_llm, make_profile_llm
):
    older = replace(AZURE_OPENAI, parallel_field_refusal=AZURE_PARALLEL_FIELD_REFUSAL)
    llm = make_profile_llm(older, abilities={"parallel_tool_calls": False})
    scripted_llm.script(*react_script(native=True, pair=True, reference=False))

    outcome = await react_run(llm)

    assert (outcome.stop_reason, outcome.answer) == ("final_answer", ANSWER)
    assert outcome.calls == (("orders", json.dumps(ORDERS)), ("invoices", json.dumps(INVOICES)))
    assert scripted_llm.quirks["parallel_field_refused"] == 1  # once: the field is not sent again


async def test_a_streamed_only_model_configured_as_streaming_both_ways_fails_naming_the_setting(
    scripted_llm, make_profile_llm
):
    llm = make_profile_llm(profile_named("qwen-dashscope"), abilities={"stream_only": False})
    scripted_llm.script(*react_script(native=True, pair=False, reference=False))

    outcome = await react_run(llm)

    assert outcome.stop_reason == "llm_error"
    assert outcome.error is not None and "answers streamed requests only" in outcome.error
    assert scripted_llm.quirks["stream_only_refused"] >= 1
