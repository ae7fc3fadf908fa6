"""An answer cut off because its server died, continued from the chat page (durable runs, README).

The server under test is killed (``kill -9``) while the model thinks after an ERP call; the real sweeper
(``agents.runs.lifecycle.runs_interrupt_lapsed``, what the beat task runs) then interrupts the run, as it does
once the dead process's lease has lapsed, and the server is started again. The page reconnects by
itself and must offer **Continue**; the run then continues from its checkpoint in the same timeline.
"""

from __future__ import annotations

import json
import re
import sys
import time

import pytest

from tests.e2e.browser_pages import expect
from tests.e2e.conftest import run_checked, wait_for
from tests.e2e.test_chat import record_frames, send, start_chat
from tests.fakes.openai_server import call, hang, text, tool_calls

pytestmark = pytest.mark.e2e

QUESTION = "Which purchase orders are still drafts?"
FIRST_THOUGHT = "Two purchase orders are drafts: PO-0002 and PO-0003."
ANSWER = "**Two** purchase orders are still drafts: PO-0002 (Hangzhou Tea Supply Co.) and PO-0003 (Nordic Office AB)."
CUT = "The server answering this stopped before it finished"
CONTINUED = "the answer continued from where it left off"
INTERRUPTED_HINT = "Continue it, or send a new message"
# The reconnect backoff of the page (up to 8 s by then) plus a server start.
RECONNECT_MS = 40000

# The sweeper as the beat task runs it once the dead server's lease has lapsed (RUN_LEASE_SECONDS after
# its last renewal): the test does not wait those seconds, it runs the sweep at that time.
SWEEP = """
import json
from datetime import timedelta

import django

django.setup()
from django.utils import timezone

from agents.runs.leases import lease_seconds
from agents.runs.lifecycle import runs_interrupt_lapsed

later = timezone.now() + timedelta(seconds=lease_seconds() + 1)
print(json.dumps([str(run_id) for run_id in runs_interrupt_lapsed(now=later)]))
"""

# Every state each interruption notice of the page goes through, across reloads.
RECORD_NOTICE_STATES = """
window.__noticeStates = [];
new MutationObserver((records) => {
  for (const record of records) {
    const nodes = record.type === "attributes" ? [record.target] : [...record.addedNodes];
    for (const node of nodes) {
      if (node.nodeType === 1 && node.classList.contains("interrupt-notice")) window.__noticeStates.push(node.dataset.state);
    }
  }
}).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-state"] });
"""


def _kill_server(server) -> None:
    """kill -9: the process ends at once, holding the run's lease; nothing is written on the way out."""
    server.process.kill()
    server.process.wait(timeout=10)
    server.process = None


def _interrupt_mid_answer(page, e2e_server, scripted_llm) -> str:
    """Ask; once the ERP call is done and the model thinks again, kill the server, sweep, restart.

    Returns the run id. The model's second reply never comes (that server is gone).
    """
    scripted_llm.script(
        tool_calls(call("erp__list_purchase_orders", {"status": "draft"}, id="call_orders")), hang(30)
    )
    start_chat(page)
    send(page, QUESTION)
    expect(page.locator(".tool-card")).to_have_class(re.compile(r"\bsucceeded\b"))
    turn = page.locator(".turn")
    expect(turn).to_have_attribute("data-run-id", re.compile(r"[0-9a-f-]{36}"))
    run_id = turn.get_attribute("data-run-id")
    # The model is asked again, after the checkpoint that holds the ERP result (stored with the events).
    wait_for(lambda: len(scripted_llm.requests) == 2, what="the model's second request")
    wait_for(
        lambda: (
            e2e_server.query(
                "SELECT COUNT(*) FROM agents_runevent WHERE event = 'step'"
                " AND json_extract(data, '$.type') = 'thinking' AND json_extract(data, '$.status') = 'start'"
                " AND json_extract(data, '$.iteration') = 2"
            )[0][0]
            > 0
        ),
        what="the second iteration to be stored",
    )
    expect(page.locator(".run-status")).to_be_visible()

    _kill_server(e2e_server)
    swept = json.loads(
        run_checked([sys.executable, "-c", SWEEP], e2e_server.env, "sweep").strip().splitlines()[-1]
    )
    e2e_server.start()  # before asserting: a failure here must not leave the shared server down
    # Runs that earlier tests of the shared server left working lapse with it too.
    assert run_id in swept
    expect(page.locator(".conn")).to_have_attribute("data-state", "open", timeout=RECONNECT_MS)
    return run_id


def _persisted(frames):
    return [f for f in frames if f.get("seq") is not None]


def test_an_answer_cut_off_by_its_server_dying_continues_in_the_same_turn_when_the_user_clicks_continue(
    make_page, e2e_server, scripted_llm
):
    # Given an answer whose server died after the ERP call, interrupted by the sweeper
    page = make_page()
    received, sent = record_frames(page)
    run_id = _interrupt_mid_answer(page, e2e_server, scripted_llm)

    # Then the turn says so, offers Continue, and the agent is shown as not working
    notice = page.locator(".turn .interrupt-notice")
    expect(notice).to_contain_text(CUT)
    continue_button = notice.locator("button")
    expect(continue_button).to_have_text("Continue")
    expect(continue_button).to_be_enabled()
    expect(page.locator(".run-status")).to_be_hidden()
    expect(page.locator("#stop-button")).to_be_hidden()
    expect(page.locator("#composer-hint")).to_contain_text(INTERRUPTED_HINT)
    assert e2e_server.query(
        "SELECT status FROM agents_run WHERE lower(id) = ?", (run_id.replace("-", ""),)
    ) == [("interrupted",)]

    # When the user clicks Continue
    scripted_llm.script(text(FIRST_THOUGHT), text(ANSWER, chunk_size=12))
    continue_button.click()

    # Then the same turn goes on from the checkpoint and finishes: the ERP is not called again
    answer = page.locator(".turn .answer")
    expect(answer.locator("strong")).to_have_text("Two")
    expect(answer).to_contain_text("PO-0003 (Nordic Office AB)")
    expect(page.locator(".run-footer")).to_be_visible()
    expect(page.locator(".turn")).to_have_count(1)
    expect(page.locator(".tool-card")).to_have_count(1)
    expect(notice).to_have_attribute("data-state", "continued")
    expect(notice).to_contain_text(CONTINUED)
    expect(notice.locator("button")).to_have_count(0)
    expect(page.locator("#composer-hint")).not_to_contain_text(INTERRUPTED_HINT)
    expect(page.locator("#stop-button")).to_be_hidden()

    assert [f for f in sent if f.get("type") == "resume_run"] == [{"type": "resume_run", "run_id": run_id}]
    frames = _persisted(received)
    assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))  # every event once, in order
    assert {f["run_id"] for f in frames} == {run_id}
    assert [f["event"] for f in frames].count("done") == 1
    assert e2e_server.query(
        "SELECT COUNT(*) FROM connectors_connectorcalllog WHERE replace(run_id, '-', '') = ?",
        (run_id.replace("-", ""),),
    ) == [(1,)]
    # The resumed model call carried the ERP result from before the crash.
    assert "PO-0002" in json.dumps(scripted_llm.requests[2]["messages"])
    assert e2e_server.query(
        "SELECT status, resumes FROM agents_run WHERE lower(id) = ?", (run_id.replace("-", ""),)
    ) == [("done", 1)]


def test_a_conversation_replayed_after_its_cut_answer_was_continued_offers_no_continue(
    make_page, e2e_server, scripted_llm
):
    # Given an answer that was cut off and then continued to its end
    page = make_page()
    _interrupt_mid_answer(page, e2e_server, scripted_llm)
    scripted_llm.script(text(FIRST_THOUGHT), text(ANSWER))
    page.locator(".interrupt-notice button").click()
    expect(page.locator(".run-footer")).to_be_visible()

    # When the conversation is opened afresh: the page replays every event from the start
    other = make_page()
    other.add_init_script(RECORD_NOTICE_STATES)
    _, sent = record_frames(other)
    other.goto(page.url)

    # Then the replay shows where the answer was cut and that it continued, never a live Continue
    expect(other.locator(".run-footer")).to_be_visible()
    notice = other.locator(".interrupt-notice")
    expect(notice).to_have_attribute("data-state", "continued")
    expect(notice).to_contain_text(CONTINUED)
    assert other.locator(".interrupt-notice button").count() == 0
    assert "open" not in other.evaluate("window.__noticeStates"), "Continue was offered during the replay"
    assert [f["after_seq"] for f in sent if f.get("type") == "resume"][0] == 0
    expect(other.locator(".answer")).to_have_count(1)
    expect(other.locator(".answer strong")).to_have_text("Two")
    expect(other.locator("#composer-hint")).not_to_contain_text(INTERRUPTED_HINT)
    expect(other.locator("#stop-button")).to_be_hidden()


class HeldSocket:
    """The page's conversation socket through Playwright's websocket routing: frames from the server can
    be held back, as when the server relays another tab's events to this one later than its own errors."""

    def __init__(self, page) -> None:
        self.held: list[str] = []
        self.holding = False
        self.route = None
        page.route_web_socket(re.compile(r"/ws/conversations/"), self._connect)

    def _connect(self, route) -> None:
        self.route = route
        server = route.connect_to_server()
        route.on_message(lambda message: server.send(message))
        server.on_message(self._from_server)

    def _from_server(self, message: str) -> None:
        if self.holding:
            self.held.append(message)
        else:
            self.route.send(message)

    def wait_for(self, page, which, timeout: float = 15.0) -> None:
        """Until a held frame that ``which`` selects arrives (the page's calls deliver the socket's messages)."""
        deadline = time.monotonic() + timeout
        while not any(which(json.loads(message)) for message in self.held):
            assert time.monotonic() < deadline, "the frame never arrived"
            page.evaluate("() => new Promise((resolve) => setTimeout(resolve, 50))")

    def release(self, which=lambda frame: True) -> None:
        """Deliver the held frames that ``which`` selects, in order; keep the others held."""
        keep = []
        for message in self.held:
            if which(json.loads(message)):
                self.route.send(message)
            else:
                keep.append(message)
        self.held = keep
        if not keep:
            self.holding = False


def test_continue_in_a_second_tab_after_the_first_continued_it_says_so_and_removes_the_button(
    make_page, e2e_server, scripted_llm
):
    # Given an interrupted answer open in two tabs; the second one gets the run's events late
    first = make_page()
    _interrupt_mid_answer(first, e2e_server, scripted_llm)
    second = make_page()
    held = HeldSocket(second)
    second.goto(first.url)
    expect(second.locator(".interrupt-notice button")).to_be_enabled()
    held.holding = True

    # When the first tab continues the answer, and then the second tab clicks Continue too
    scripted_llm.script(text(FIRST_THOUGHT), text(ANSWER))
    first.locator(".interrupt-notice button").click()
    expect(first.locator(".run-footer")).to_be_visible()
    second_button = second.locator(".interrupt-notice button")
    second_button.click()

    # Then the second tab waits for the server with the button disabled
    expect(second_button).to_be_disabled()
    expect(second_button).to_have_text("Continuing…")
    held.wait_for(second, lambda frame: frame["seq"] is None)

    # and shows the server's refusal without a button once it arrives
    held.release(lambda frame: frame["seq"] is None)
    notice = second.locator(".interrupt-notice")
    expect(notice).to_have_attribute("data-state", "refused")
    expect(notice).to_contain_text("There is no interrupted answer to resume here.")
    expect(notice.locator("button")).to_have_count(0)
    expect(second.locator("#stop-button")).to_be_hidden()

    # and then the answer the first tab continued, in the same turn
    held.release()
    expect(notice).to_have_attribute("data-state", "continued")
    expect(second.locator(".run-footer")).to_be_visible()
    expect(second.locator(".turn")).to_have_count(1)
    expect(second.locator(".answer strong")).to_have_text("Two")


def test_a_new_message_while_an_answer_is_cut_off_starts_a_new_answer_and_the_cut_one_stays_as_it_is(
    make_page, e2e_server, scripted_llm
):
    # Given an interrupted answer (the server takes a message now as a new question, not a follow-up)
    page = make_page()
    page.add_init_script(RECORD_NOTICE_STATES)
    run_id = _interrupt_mid_answer(page, e2e_server, scripted_llm)
    expect(page.locator(".interrupt-notice button")).to_be_enabled()
    expect(page.locator("#composer-hint")).to_contain_text(INTERRUPTED_HINT)

    # When the user asks something else instead of continuing
    scripted_llm.script(text("Hello."), text("Hello! What else can I do?"))
    send(page, "Never mind. Hello?")

    # Then a new turn answers it, and the cut answer no longer offers Continue
    expect(page.locator(".turn")).to_have_count(2)
    expect(page.locator(".turn").nth(1).locator(".answer")).to_have_text("Hello! What else can I do?")
    expect(page.locator(".turn").nth(1).locator(".run-footer")).to_be_visible()
    notice = page.locator(".turn").nth(0).locator(".interrupt-notice")
    expect(notice).to_have_attribute("data-state", "superseded")
    expect(notice).to_contain_text("A newer question was asked")
    expect(notice.locator("button")).to_have_count(0)
    expect(page.locator("#composer-hint")).not_to_contain_text(INTERRUPTED_HINT)
    assert e2e_server.query(
        "SELECT status FROM agents_run WHERE lower(id) = ?", (run_id.replace("-", ""),)
    ) == [("interrupted",)]

    # and so does a reload, which replays both runs from the start
    page.reload()
    expect(page.locator(".turn").nth(1).locator(".run-footer")).to_be_visible()
    expect(page.locator(".turn").nth(0).locator(".interrupt-notice")).to_have_attribute(
        "data-state", "superseded"
    )
    assert page.locator(".interrupt-notice button").count() == 0
    assert "open" not in page.evaluate("window.__noticeStates")


def _frame(seq, event, run_id="r1", **data):
    return {"seq": seq, "run_id": run_id, "event": event, "data": data}


CUT_FRAMES = [
    _frame(1, "step", type="thinking", status="start", iteration=1),
    _frame(
        2,
        "step",
        type="iteration",
        status="start",
        iteration=1,
        tool_name="erp__list_payments",
        tool_call_id="c1",
    ),
    _frame(
        3,
        "error",
        code="run_interrupted",
        message="The server working on this answer stopped.",
        resumable=True,
    ),
]


def test_the_timeline_offers_continue_in_chinese_and_follows_each_turn_of_an_interruption(make_page):
    """The timeline's own logic, fed frames in a Chinese page: a call in flight is shown as interrupted,
    Continue resumes the named run, a second interruption of the continued run offers Continue again, and
    an interruption that cannot be resumed is only an error."""
    page = make_page(locale="zh-CN")
    result = page.evaluate(
        """async ([cut, again]) => {
            await new Promise((resolve, reject) => {  // the JavaScript catalogue, as the chat page loads it
                const script = Object.assign(document.createElement("script"), { src: "/jsi18n/", onload: resolve, onerror: reject });
                document.head.append(script);
            });
            const { Timeline } = await import("/static/js/chat-timeline.js");
            const settle = () => new Promise((resolve) => setTimeout(resolve, 400));
            const scroller = document.createElement("div");
            const list = document.createElement("ol");
            scroller.append(list);
            document.body.append(scroller);
            const continued = [];
            const offered = [];
            const timeline = new Timeline({ list, scroller, empty: document.createElement("p"), onResend: () => {},
                onUnknownRun: () => {}, onWorkingChange: () => {}, onContinue: (runId) => continued.push(runId),
                onInterruptedChange: (value) => offered.push(value) });
            timeline.loadHistory([{ id: 1, role: "user", content: "付款情况？", run_id: "r1", injected: false }], "r1");
            for (const frame of cut) timeline.handle(frame);
            const notice = () => [...list.querySelectorAll(".interrupt-notice")].pop();
            const seen = { pending: notice().dataset.state, buttonHiddenAtFirst: notice().querySelector("button").hidden };
            await settle();
            seen.text = notice().textContent;
            seen.card = list.querySelector(".tool-card").textContent;
            seen.working = timeline.working;
            notice().querySelector("button").click();
            seen.clicked = [notice().dataset.state, notice().querySelector("button").disabled, timeline.working];
            timeline.handle(again[0]);
            seen.cardResumed = list.querySelector(".tool-card").className;
            timeline.handle(again[1]);
            await settle();
            const notices = list.querySelectorAll(".interrupt-notice");
            seen.after = [...notices].map((n) => n.dataset.state);
            seen.firstText = notices[0].textContent;
            timeline.handle({ seq: 9, run_id: "r1", event: "error", data: { code: "run_interrupted", message: "gone", resumable: false } });
            seen.notResumable = list.querySelector(".step.run-error:not(.interrupt-notice)")?.textContent;
            return { seen, continued, offered, last: notice().dataset.state };
        }""",
        [
            CUT_FRAMES,
            [
                _frame(4, "step", type="thinking", status="start", iteration=2),
                _frame(5, "error", code="run_interrupted", message="stopped again", resumable=True),
            ],
        ],
    )
    seen = result["seen"]
    assert seen["pending"] == "pending" and seen["buttonHiddenAtFirst"]
    assert "处理此回答的服务器在完成前停止了" in seen["text"] and "继续" in seen["text"]
    assert "已中断" in seen["card"] and not seen["working"]
    assert seen["clicked"] == ["resuming", True, True]
    assert result["continued"] == ["r1"]
    assert seen["after"] == ["continued", "open"]
    assert "回答已从中断处继续" in seen["firstText"]
    assert "running" in seen["cardResumed"] and "paused" not in seen["cardResumed"]
    assert seen["notResumable"] == "gone"
    assert result["offered"] == [True, False, True, False]
    assert result["last"] == "continued"
