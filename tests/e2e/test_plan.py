"""Plan mode in a real browser: a two-round plan drawn live, step by step, against the demo ERP.

The scripted model plays the planner, the step agents and the analyser (tests/agents/plan_script.py);
the steps call the demo ERP through the real connector tools. The analyser of the first round is held
until the page shows that round finished, so the test sees the plan while it is live. The test saves
``docs/screenshots/plan.png``, which the README shows.
"""

from __future__ import annotations

import re
import sys
import threading

import pytest

from tests.agents.plan_script import ANALYZER, PLANNER, PlanModel, step, verdict
from tests.e2e.browser_pages import expect
from tests.e2e.chat_pages import MOUNT_TIMELINE_LIST, open_new_chat
from tests.e2e.conftest import ROOT, run_checked
from tests.fakes.openai_server import call, text, tool_calls

pytestmark = pytest.mark.e2e

SCREENSHOT = ROOT / "docs" / "screenshots" / "plan.png"
MAX_SCREENSHOT_BYTES = 300 * 1024
AGENT = "Planning assistant"
QUESTION = "Which purchase orders are drafts, who are their suppliers, and what has been paid?"
ANSWER = "**Two** purchase orders are drafts (PO-0002 and PO-0003) and nothing has been paid yet."
REASON = "The suppliers of the draft orders are still missing."

# A second agent of the e2e world, in plan mode, with the same ERP connector.
PLAN_AGENT_SETUP = """
import django
django.setup()
from agents.models import Agent
source = Agent.objects.unscoped().get(name="Purchasing assistant")
agent, _ = Agent.objects.unscoped().get_or_create(
    organization=source.organization,
    name="Planning assistant",
    defaults={
        "description": "Plans questions with several parts.",
        "instructions": source.instructions,
        "execution_mode": "plan",
        "completion_check": False,
    },
)
agent.connectors.set(source.connectors.all())
"""


@pytest.fixture(scope="module")
def plan_agent(e2e_server):
    run_checked([sys.executable, "-c", PLAN_AGENT_SETUP], e2e_server.env, "plan agent setup")
    return AGENT


def two_round_plan(first_round_seen: threading.Event) -> PlanModel:
    def hold_first_judgement(kind: str, seen: int) -> None:
        if kind == ANALYZER and seen == 0:
            first_round_seen.wait(20)

    return PlanModel(
        plans=[
            [
                step("1", "List the draft purchase orders", tool="erp__list_purchase_orders", model="fast"),
                step("2", "List the payments", tool="erp__list_payments", model="fast"),
            ],
            [
                step("1", "Find the suppliers of the draft orders", tool="erp__list_purchase_orders"),
                step("2", "Summarise orders, suppliers and payments", deps=["1"], model="smart"),
            ],
        ],
        verdicts=[verdict(False, 0.4, REASON), verdict(True, 0.95, "Everything asked is known.")],
        steps={
            "List the draft purchase orders": [
                tool_calls(call("erp__list_purchase_orders", {"status": "draft"}, id="drafts")),
                text("PO-0002 and PO-0003 are drafts."),
            ],
            "List the payments": [
                tool_calls(call("erp__list_payments", {}, id="payments")),
                text("No payments yet."),
            ],
            "Find the suppliers of the draft orders": [
                tool_calls(call("erp__list_purchase_orders", {"status": "draft"}, id="suppliers")),
                text("PO-0002: Hangzhou Tea Supply Co.; PO-0003: Nordic Office AB."),
            ],
            "Summarise orders, suppliers and payments": [
                text("Two drafts from two suppliers; nothing paid.")
            ],
        },
        answer=ANSWER,
        before=hold_first_judgement,
    )


def test_a_two_round_plan_is_drawn_live_and_again_after_a_reload(make_page, plan_agent, scripted_llm):
    first_round_seen = threading.Event()
    model = two_round_plan(first_round_seen).install(scripted_llm)
    page = make_page(width=1100, height=1250)
    open_new_chat(page, plan_agent)

    try:
        # When the user asks, the first round's plan appears and its steps run to the end
        page.fill("#composer-input", QUESTION)
        page.press("#composer-input", "Enter")
        first = page.locator(".plan-round[data-round='1']")
        expect(first.locator(".plan-step")).to_have_count(2)
        expect(first.locator(".plan-step-task").first).to_have_text("List the draft purchase orders")
        expect(first.locator(".plan-step[data-step-id='1'] .plan-step-meta")).to_contain_text("model: fast")
        for step_id in ("1", "2"):
            expect(first.locator(f".plan-step[data-step-id='{step_id}']")).to_have_attribute(
                "data-status", "done"
            )
        drafts = first.locator(".plan-step[data-step-id='1'] .tool-card")
        expect(drafts).to_have_class(re.compile(r"\bsucceeded\b"))
        expect(drafts.locator(".tool-name")).to_have_text("erp__list_purchase_orders")
        expect(first.locator(".plan-step[data-step-id='2'] .tool-name")).to_have_text("erp__list_payments")
        expect(page.locator(".run-status-text")).to_have_text("Checking the results…")
    finally:
        first_round_seen.set()  # never leave the scripted server's thread waiting

    # Then the analyser asks for another round: a separator says why, and the second plan runs
    replan = page.locator(".plan-replan")
    expect(replan).to_contain_text("Not done yet: planning again")
    expect(replan.locator(".plan-replan-reason")).to_have_text(REASON)
    second = page.locator(".plan-round[data-round='2']")
    expect(second.locator(".plan-step")).to_have_count(2)
    expect(second.locator(".plan-step[data-step-id='2'] .plan-step-deps")).to_have_text("after step 1")
    expect(second.locator(".plan-step[data-step-id='2']")).to_have_attribute("data-status", "done")
    answer = page.locator(".answer")
    expect(answer.locator("strong")).to_have_text("Two")
    expect(page.locator(".run-footer")).to_contain_text("2 rounds")
    expect(page.locator(".run-footer")).to_contain_text("4 plan steps")
    expect(page.locator("#stop-button")).to_be_hidden()

    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    page.locator("#composer-input").blur()
    page.locator(".run-footer").scroll_into_view_if_needed()
    page.screenshot(path=str(SCREENSHOT), full_page=False)
    assert 0 < SCREENSHOT.stat().st_size < MAX_SCREENSHOT_BYTES

    # The steps keep their results (collapsible) and the ERP's observation is in the step's tool card
    suppliers = second.locator(".plan-step[data-step-id='1']")
    expect(suppliers.locator(".plan-step-result summary")).to_have_text("Result")
    expect(suppliers.locator(".plan-step-result-text")).to_contain_text("Nordic Office AB")
    suppliers.locator(".tool-card summary").click()
    expect(suppliers.locator(".tool-observation")).to_contain_text("PO-0003")
    order = page.evaluate(
        "() => ['.plan-round[data-round=\"1\"]', '.plan-replan', '.plan-round[data-round=\"2\"]', '.answer']"
        ".map((s) => document.querySelector(s)).every((node, i, all) => i === 0 ||"
        " Boolean(all[i - 1].compareDocumentPosition(node) & Node.DOCUMENT_POSITION_FOLLOWING))"
    )
    assert order
    assert model.kinds().count(PLANNER) == 2

    # After a reload the plan is drawn again from the stored events
    page.reload()
    expect(page.locator(".plan-round")).to_have_count(2)
    expect(page.locator(".plan-step[data-status='done']")).to_have_count(4)
    expect(page.locator(".plan-replan-reason")).to_have_text(REASON)
    expect(page.locator(".answer strong")).to_have_text("Two")


def frame(seq, event, **data):
    return {"seq": seq, "run_id": "r1", "event": event, "data": data}


def call_event(seq, step_id, status, **extra):
    return frame(
        seq,
        "plan",
        type="step_iteration",
        round=1,
        step_id=step_id,
        status=status,
        iteration=1,
        tool_name="erp__create_payment",
        tool_args={"amount": 60000},
        tool_call_id="call_1",  # the same id in both steps: models number their calls per conversation
        **extra,
    )


PLAN_FRAMES = [
    frame(1, "phase", phase="planning", round=1),
    frame(
        2,
        "plan",
        type="dag",
        round=1,
        steps=[
            {"id": "a", "task": "Pay supplier A", "dependencies": [], "tool_hint": None, "model_hint": None},
            {
                "id": "b",
                "task": "Pay supplier B",
                "dependencies": [],
                "tool_hint": None,
                "model_hint": "smart",
            },
            {"id": "c", "task": "Report", "dependencies": ["a", "b"], "tool_hint": None, "model_hint": None},
        ],
    ),
    frame(3, "phase", phase="executing", round=1),
    frame(4, "plan", type="step", round=1, step_id="a", status="running"),
    frame(5, "plan", type="step", round=1, step_id="b", status="running"),
    call_event(6, "a", "start"),
    call_event(7, "b", "start"),
    frame(
        8,
        "approval",
        status="pending",
        approval_id="x1",
        tool_name="erp__create_payment",
        tool_args={},
        approvers=["april"],
        decided_by=None,
        reason=None,
        tool_call_id="call_1",
        plan_step_id="b",
        plan_round=1,
    ),
    call_event(9, "a", "done", observation="paid", error=None, iter_elapsed=0.2, outcome="ok"),
    frame(10, "plan", type="step", round=1, step_id="a", status="done", result="Paid A.", elapsed=0.3),
    frame(
        11, "done", answer="", iterations=1, usage={}, elapsed=1.0, cancelled=True, stop_reason="cancelled"
    ),
]


def test_an_approval_inside_a_plan_lands_on_its_step_and_a_stop_marks_what_did_not_finish(
    make_page, e2e_server
):
    page = make_page()
    result = page.evaluate(
        "async (frames) => {"
        + MOUNT_TIMELINE_LIST
        + """
            const timeline = new Timeline({ list, scroller, empty, onResend: () => {}, onUnknownRun: () => {},
                onWorkingChange: () => {} });
            timeline.loadHistory([{ id: 1, role: "user", content: "Pay both", run_id: "r1", injected: false }], "r1");
            for (const frame of frames) timeline.handle(frame);
            const step = (id) => list.querySelector(`.plan-step[data-step-id="${id}"]`);
            const card = (id) => step(id).querySelector(".tool-card");
            return {
                statuses: ["a", "b", "c"].map((id) => step(id).dataset.status),
                approvalOnA: card("a").querySelector(".tool-approval").hidden,
                approvalOnB: card("b").querySelector(".tool-approval").textContent,
                cardA: card("a").className,
                cardB: card("b").className,
                deps: step("c").querySelector(".plan-step-deps").textContent,
                model: step("b").querySelector(".plan-step-meta").textContent,
                result: step("a").querySelector(".plan-step-result-text").textContent,
                looseCards: list.querySelectorAll(".run > .steps > .tool-card").length,
                footer: list.querySelector(".run-footer").textContent,
            };
        }""",
        PLAN_FRAMES,
    )
    assert result["statuses"] == ["done", "stopped", "stopped"]
    assert result["approvalOnA"] is True and "Waiting for approval from april." in result["approvalOnB"]
    assert "succeeded" in result["cardA"] and "stopped" in result["cardB"]
    assert result["deps"] == "after step 1, 2" and "model: smart" in result["model"]
    assert result["result"].strip() == "Paid A."
    assert result["looseCards"] == 0  # every card sits inside its step
    assert (
        "Stopped" in result["footer"] and "1 round" in result["footer"] and "3 plan steps" in result["footer"]
    )
