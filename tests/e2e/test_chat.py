"""The chat in a real browser: Debian's chromium against daphne, the scripted LLM and the demo ERP.

Each test waits on what the page shows (Playwright's ``expect``) or on the server's state, never on
fixed sleeps. The first test saves ``docs/screenshots/chat.png``, which the README shows.
"""

from __future__ import annotations

import json
import re
import threading

import pytest

from tests.e2e.browser_pages import expect
from tests.e2e.chat_pages import open_new_chat
from tests.e2e.conftest import ROOT, wait_for
from tests.fakes.openai_server import call, hang, text, tool_calls

pytestmark = pytest.mark.e2e

SCREENSHOT = ROOT / "docs" / "screenshots" / "chat.png"
MAX_SCREENSHOT_BYTES = 300 * 1024

QUESTION = "Which purchase orders are still drafts?"
FOLLOW_UP = "Please include the suppliers too."
ANSWER = (
    "**Two** purchase orders are still drafts:\n\n"
    "| Order | Supplier | Amount (CNY) |\n"
    "|---|---|--:|\n"
    "| PO-0002 | Hangzhou Tea Supply Co. | 1,280.50 |\n"
    "| PO-0003 | Nordic Office AB | 9,400.00 |\n\n"
    "Both suppliers are *active*. Approve them with `approve_purchase_order`, or open the "
    "[ERP](https://erp.example.com/orders) to review them first."
)
XSS_ANSWER = (
    "Here you go: <img src=x onerror=\"window.__xss='img'\"> and "
    "[click me](javascript:window.__xss='link') and <script>window.__xss='script'</script>\n\n"
    "| a very long column heading that keeps going | another rather long heading | third |\n"
    "|---|---|---|\n"
    "| cell | cell | cell |\n\n"
    "```\n" + "x = 'a long line of code that is much wider than a phone screen' " * 3 + "\n```\n"
    "Averyveryverylongwordwithoutanyspacesthatmustwrapratherthanscrollthepagesideways."
)


def start_chat(page):
    open_new_chat(page)  # the conversation is created by the first message


def send(page, content):
    page.fill("#composer-input", content)
    page.press("#composer-input", "Enter")


def record_frames(page):
    """Every websocket frame the page receives (parsed) and sends (parsed), in order."""
    received: list[dict] = []
    sent: list[dict] = []

    def on_socket(ws):
        ws.on("framereceived", lambda payload: received.append(json.loads(payload)))
        ws.on("framesent", lambda payload: sent.append(json.loads(payload)))

    page.on("websocket", on_socket)
    return received, sent


def _ask_with_follow_up(page, e2e_server, follow_up_sent):
    """The user asks, then adds a follow-up while the agent works; the model is released once it is stored."""
    send(page, QUESTION)
    expect(page.locator(".turn .msg.user").first).to_have_text(QUESTION)
    expect(page.locator("#stop-button")).to_be_visible()
    send(page, FOLLOW_UP)
    follow_up = page.locator(".step.follow-up")
    expect(follow_up).to_have_attribute("data-status", "pending")
    wait_for(
        lambda: e2e_server.query("SELECT COUNT(*) FROM agents_message WHERE injected = 1")[0][0] == 1,
        what="the follow-up to be stored as injected",
    )
    follow_up_sent.set()


def test_chat_shows_the_tool_card_the_streamed_answer_and_the_follow_up(make_page, e2e_server, scripted_llm):
    # Given a model that calls the ERP once (held back until the user's follow-up is in), then answers.
    follow_up_sent = threading.Event()

    def orders_call(body):
        follow_up_sent.wait(20)
        return tool_calls(call("erp__list_purchase_orders", {"status": "draft"}, id="call_orders"))

    scripted_llm.script(
        orders_call,
        text("Two purchase orders are drafts: PO-0002 and PO-0003."),
        text(ANSWER, chunk_size=10),
    )
    page = make_page(width=1280, height=1000)
    received, _ = record_frames(page)
    start_chat(page)

    # When the user asks, and adds a follow-up while the agent works
    try:
        _ask_with_follow_up(page, e2e_server, follow_up_sent)
    finally:
        follow_up_sent.set()  # never leave the scripted server's thread waiting

    # Then the tool card shows the real call, the follow-up is taken in, and the answer streams in
    card = page.locator(".tool-card")
    expect(card).to_have_class(re.compile(r"\bsucceeded\b"))
    expect(card.locator(".tool-name")).to_have_text("erp__list_purchase_orders")
    expect(card.locator(".badge.ok")).to_have_text("OK")
    expect(page.locator(".step.follow-up")).to_have_attribute("data-status", "taken")
    answer = page.locator(".answer")
    expect(answer.locator("strong").first).to_have_text("Two")
    expect(answer.locator("table td").first).to_have_text("PO-0002")
    expect(answer.locator("a")).to_have_attribute("rel", "noopener noreferrer")
    footer = page.locator(".run-footer")
    expect(footer).to_be_visible()
    expect(footer).to_contain_text(re.compile(r"\d+ steps?"))
    expect(footer).to_contain_text("tokens")
    expect(page.locator("#stop-button")).to_be_hidden()

    # The follow-up sits after the tool call it came in after, and the model saw it.
    assert card.evaluate(
        "(c) => Boolean(c.compareDocumentPosition(document.querySelector('.follow-up')) & Node.DOCUMENT_POSITION_FOLLOWING)"
    )
    assert FOLLOW_UP in json.dumps(scripted_llm.requests[1]["messages"])

    # The socket delivered every event once, in order, with the answer in deltas (pieces that reach the
    # server while its previous write is under way share one frame).
    persisted = [f for f in received if f.get("seq") is not None]
    seqs = [f["seq"] for f in persisted]
    assert seqs == list(range(1, len(seqs) + 1))
    kinds = [(f["event"], f["data"].get("type") or f["data"].get("status")) for f in persisted]
    assert (
        kinds.index(("step", "iteration"))
        < kinds.index(("inject", "inject"))
        < kinds.index(("answer", "start"))
    )
    deltas = [
        f["data"]["content"] for f in persisted if f["event"] == "answer" and f["data"]["status"] == "delta"
    ]
    assert deltas and "".join(deltas) == persisted[-1]["data"]["answer"]
    assert kinds[-1][0] == "done"

    # Open the card: arguments and the ERP's observation.
    card.locator("summary").click()
    expect(card.locator(".tool-json")).to_contain_text('"status": "draft"')
    expect(card.locator(".tool-observation")).to_contain_text("PO-0002")

    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    page.locator("#composer-input").blur()
    footer.scroll_into_view_if_needed()
    page.screenshot(path=str(SCREENSHOT))
    assert 0 < SCREENSHOT.stat().st_size < MAX_SCREENSHOT_BYTES


def test_answer_markup_from_the_model_is_escaped_and_the_phone_layout_never_scrolls_sideways(
    make_page, scripted_llm
):
    scripted_llm.script(text("Here you go."), text(XSS_ANSWER, chunk_size=24))
    page = make_page(width=390, height=844)
    start_chat(page)

    # Shift+Enter adds a line; Enter sends.
    page.fill("#composer-input", "Show me something tricky")
    page.press("#composer-input", "Shift+Enter")
    page.keyboard.type("please")
    assert page.input_value("#composer-input") == "Show me something tricky\nplease"
    expect(page.locator(".turn")).to_have_count(0)
    page.press("#composer-input", "Enter")
    expect(page.locator(".turn .msg.user")).to_have_text("Show me something tricky\nplease")
    expect(page.locator(".run-footer")).to_be_visible()

    answer = page.locator(".answer")
    expect(answer).to_contain_text("<img src=x onerror=")
    assert answer.locator("img, script, iframe, svg, style").count() == 0
    assert answer.locator("a").count() == 0  # the javascript: link is plain text
    assert "click me" in answer.inner_text()
    assert page.evaluate("() => window.__xss") is None
    overflow = page.evaluate(
        "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth,"
        " document.getElementById('chat-scroll').scrollWidth, document.getElementById('chat-scroll').clientWidth]"
    )
    assert overflow[0] <= overflow[1] and overflow[2] <= overflow[3], overflow

    # The conversation list is a drawer on a phone: hidden, opened by the menu button, closed by Escape.
    sidebar = page.locator("#chat-sidebar")
    expect(sidebar).not_to_be_in_viewport()
    page.click("[data-sidebar-toggle]")
    expect(sidebar).to_be_in_viewport()
    expect(sidebar.locator(".conversation-link.current")).to_contain_text("Show me something tricky")
    page.keyboard.press("Escape")
    expect(sidebar).not_to_be_in_viewport()


def test_the_page_reconnects_after_a_server_restart_and_resumes_without_duplicates(
    make_page, e2e_server, scripted_llm
):
    scripted_llm.script(text("Hi."), text("Hello! How can I help?"))
    page = make_page()
    _, sent = record_frames(page)
    start_chat(page)
    send(page, "hello")
    expect(page.locator(".run-footer")).to_have_count(1)
    expect(page.locator(".run-footer")).to_be_visible()

    e2e_server.restart()
    expect(page.locator(".conn")).to_have_attribute("data-state", "open")
    resumes = [f for f in sent if f.get("type") == "resume"]
    assert len(resumes) >= 2 and resumes[0]["after_seq"] == 0
    last_seq = resumes[-1]["after_seq"]
    assert last_seq > 0, "the reconnect resumes after the events already shown"

    scripted_llm.script(text("Sure."), text("Second answer."))
    send(page, "and again")
    expect(page.locator(".run-footer")).to_have_count(2)
    expect(page.locator(".turn")).to_have_count(2)
    expect(page.locator(".answer").nth(0)).to_have_text("Hello! How can I help?")
    expect(page.locator(".answer").nth(1)).to_have_text("Second answer.")


def test_the_chat_speaks_simplified_chinese_to_a_chinese_browser(make_page, scripted_llm):
    # Scripted and waited for: a run left working would take the next test's scripted reply.
    scripted_llm.script(text("你好。"), text("你好！有什么可以帮您？"))
    page = make_page(locale="zh-CN")
    expect(page.locator("h1")).to_have_text("聊天")
    start_chat(page)
    expect(page.locator("#send-button")).to_have_text("发送")
    send(page, "你好")
    expect(page.locator(".conn-label")).to_have_text("已连接")
    expect(page.locator(".run-footer")).to_be_visible()
    expect(page.locator(".answer")).to_have_text("你好！有什么可以帮您？")


def test_stop_cancels_the_run_and_the_footer_says_stopped(make_page, scripted_llm):
    scripted_llm.script(hang(20))
    page = make_page()
    start_chat(page)
    send(page, "Summarise every order since 2019")
    stop = page.locator("#stop-button")
    expect(stop).to_be_visible()
    expect(page.locator(".run-status")).to_be_visible()

    stop.click()

    footer = page.locator(".run-footer")
    expect(footer).to_contain_text("Stopped")
    expect(stop).to_be_hidden()
    expect(page.locator(".run-status")).to_be_hidden()
    expect(page.locator("#composer")).not_to_have_class(re.compile(r"\bworking\b"))


def test_stop_while_the_new_conversation_is_being_created_still_stops_the_run(
    make_page, e2e_server, scripted_llm
):
    # Given a new chat whose first message is still creating its conversation (the server is slow)
    scripted_llm.script(hang(20))
    page = make_page()
    _, sent = record_frames(page)
    start_chat(page)
    creating = []

    def hold_the_creation(route):
        if route.request.method == "POST":
            creating.append(route)
        else:
            route.continue_()

    page.route(re.compile(r"/api/v1/orgs/acme/conversations/$"), hold_the_creation)
    send(page, "Summarise every order since 2019")
    stop = page.locator("#stop-button")
    expect(stop).to_be_visible()
    # (each poll makes a round trip to the page, which lets Playwright call the route handler)
    wait_for(lambda: page.evaluate("() => false") or creating, what="the conversation to be requested")

    # When the user stops before the conversation exists, and the server then answers
    stop.click()
    expect(stop).to_have_text("Stopping…")
    creating[0].continue_()

    # Then the cancel follows the message, and the run ends stopped
    expect(page.locator(".run-footer")).to_contain_text("Stopped")
    expect(stop).to_be_hidden()
    assert [f["type"] for f in sent if f["type"] != "resume"] == ["message", "cancel"]
    assert e2e_server.query("SELECT status FROM agents_run ORDER BY started_at DESC LIMIT 1") == [
        ("cancelled",)
    ]
