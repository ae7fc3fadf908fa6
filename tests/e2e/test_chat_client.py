"""The chat's own modules in the browser: the markdown renderer against XSS, and the timeline against
every event of the websocket contract (DESIGN section 4), fed frame by frame without a server run.
"""

from __future__ import annotations

import pytest

from tests.e2e.chat_pages import MOUNT_TIMELINE_LIST

pytestmark = pytest.mark.e2e


MARKDOWN_ATTACKS = [
    "<img src=x onerror=window.__xss=1>",
    "<script>window.__xss=1</script>",
    '<a href="javascript:window.__xss=1">x</a>',
    "[x](javascript:window.__xss=1)",
    "[x](JaVaScRiPt:window.__xss=1)",
    "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[x](vbscript:msgbox)",
    '[x](https://ok.example/" onmouseover="window.__xss=1)',
    '[a](https://x.example/"><img src=x onerror=window.__xss=1>)',
    "`<b onclick=window.__xss=1>code</b>`",
    "```\n</code></pre><img src=x onerror=window.__xss=1>\n```",
    '```"><img src=x onerror=window.__xss=1>\ncode\n```',
    "| <svg onload=window.__xss=1> | x |\n|---|---|\n| <iframe src=javascript:window.__xss=1> | y |",
    "**<style>body{display:none}</style>**",
    "# <details open ontoggle=window.__xss=1>",
    "- <input autofocus onfocus=window.__xss=1>",
    "> <math><mtext><table><mglyph><style><img src=x onerror=window.__xss=1>",
    "![img](https://x.example/y.png) _<b>x</b>_ ~~<u>y</u>~~",
    "&lt;img src=x onerror=window.__xss=1&gt; &#106;avascript:",
]


def test_the_markdown_renderer_only_produces_known_tags_and_http_links(make_page):
    page = make_page()
    result = page.evaluate(
        """async (attacks) => {
            const { renderMarkdown } = await import("/static/js/chat-markdown.js");
            const tags = new Set(["p", "h3", "h4", "h5", "h6", "strong", "em", "del", "code", "pre", "ul", "ol",
                "li", "blockquote", "hr", "br", "table", "thead", "tbody", "tr", "th", "td", "a", "div"]);
            const attributes = new Set(["class", "data-lang", "href", "target", "rel", "start"]);
            const box = document.createElement("div");
            document.body.append(box);
            const bad = [];
            for (const attack of attacks) {
                const holder = document.createElement("div");
                holder.innerHTML = renderMarkdown(attack);
                box.append(holder);
                for (const node of holder.querySelectorAll("*")) {
                    const tag = node.tagName.toLowerCase();
                    if (!tags.has(tag)) bad.push(`${attack} -> <${tag}>`);
                    for (const attr of node.attributes) {
                        if (!attributes.has(attr.name)) bad.push(`${attack} -> ${tag}[${attr.name}]`);
                        if (attr.name === "href" && !/^https?:\\/\\//i.test(attr.value)) bad.push(`${attack} -> ${attr.value}`);
                    }
                }
            }
            await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 50)));
            const sample = renderMarkdown("# T\\n**b** *i* `c` [l](https://e.example)\\n\\n- one\\n- two");
            return { bad, xss: window.__xss ?? null, sample };
        }""",
        MARKDOWN_ATTACKS,
    )
    assert result["bad"] == []
    assert result["xss"] is None
    assert result["sample"] == (
        "<h3>T</h3><p><strong>b</strong> <em>i</em> <code>c</code> "
        '<a href="https://e.example" target="_blank" rel="noopener noreferrer">l</a></p>'
        "<ul><li>one</li><li>two</li></ul>"
    )


def frame(seq, run_id, event, **data):
    return {"seq": seq, "run_id": run_id, "event": event, "data": data}


PAYMENT_ARGS = {"order": "PO-0002", "amount": 1280.5}
ORDER_ARGS = {"order_id": 2}


def tool_step(seq, status, tool_call_id, tool_name, tool_args, **data):
    """A step of run r1's first iteration about the tool call ``tool_call_id``."""
    return frame(
        seq,
        "r1",
        "step",
        type="iteration",
        status=status,
        iteration=1,
        tool_name=tool_name,
        tool_args=tool_args,
        tool_call_id=tool_call_id,
        **data,
    )


def payment_approval(seq, status, **data):
    """An event of run r1's approval "a1" of its payment, which Ada and Oscar may decide."""
    return frame(
        seq,
        "r1",
        "approval",
        status=status,
        approval_id="a1",
        tool_name="erp__create_payment",
        tool_args={},
        approvers=["ada", "oscar"],
        **data,
    )


CONTRACT_FRAMES = [
    frame(1, "r1", "step", type="thinking", status="start", iteration=1),
    frame(2, "r1", "phase", phase="selecting_tools", total_tools=40),
    frame(3, "r1", "compact", original_messages=30, kept_messages=8),
    frame(4, "r1", "step", type="thinking", status="done", iteration=1, reasoning="Pay the supplier first."),
    tool_step(5, "start", "c1", "erp__create_payment", PAYMENT_ARGS),
    tool_step(6, "start", "c2", "erp__get_purchase_order", ORDER_ARGS),
    payment_approval(7, "pending", decided_by=None, reason="", tool_call_id="c1"),
    payment_approval(8, "approved", decided_by="ada", reason="Budgeted for Q3."),
    tool_step(
        9,
        "done",
        "c1",
        "erp__create_payment",
        PAYMENT_ARGS,
        observation="payment 12 created",
        error=None,
        iter_elapsed=0.42,
        outcome="ok",
    ),
    tool_step(
        10,
        "done",
        "c2",
        "erp__get_purchase_order",
        ORDER_ARGS,
        observation="Error: timed out",
        error="timed out after 10 s",
        iter_elapsed=10.0,
        outcome="timeout",
    ),
    frame(11, "r1", "plan", steps=[{"id": "s1", "status": "running"}]),
    frame(12, "r1", "something_new", anything=True),
    frame(13, "r1", "error", code="llm_error", message="The model timed out once; retrying."),
    frame(14, "r1", "answer", status="start"),
    frame(15, "r1", "answer", status="delta", content="Partial <b>streamed</b> text"),
    frame(16, "r1", "answer", status="done", content="Paid **PO-0002**.", fallback=True),
    frame(
        17,
        "r1",
        "done",
        answer="Paid PO-0002.",
        iterations=3,
        usage={"prompt_tokens": 1000, "completion_tokens": 234, "total_tokens": 1234},
        elapsed=4.2,
        cancelled=True,
        stop_reason="cancelled",
    ),
    # r2: a follow-up from the history is taken in; one sent too late is offered again.
    frame(18, "r2", "step", type="thinking", status="start", iteration=1),
    frame(19, "r2", "inject", type="inject", content="Only unpaid ones."),
    frame(20, "r2", "answer", status="done", content="Nothing is unpaid.", fallback=False),
    frame(
        21,
        "r2",
        "done",
        answer="Nothing is unpaid.",
        iterations=1,
        usage={"total_tokens": 50},
        elapsed=0.5,
        cancelled=False,
        stop_reason="max_iterations",
    ),
]
HISTORY = [
    {"id": 1, "role": "user", "content": "Pay PO-0002", "run_id": "r1", "injected": False},
    {"id": 2, "role": "user", "content": "Anything else?", "run_id": "r2", "injected": False},
    {"id": 3, "role": "user", "content": "Only unpaid ones.", "run_id": "r2", "injected": True},
    {"id": 4, "role": "user", "content": "And the drafts?", "run_id": "r2", "injected": True},
    {"id": 5, "role": "summary", "content": "(summary for the model)", "run_id": "r2", "injected": False},
]


def test_the_timeline_renders_every_event_of_the_websocket_contract(make_page):
    page = make_page()
    result = page.evaluate(
        "async ([history, frames]) => {"
        + MOUNT_TIMELINE_LIST
        + """
            const resent = [];
            const timeline = new Timeline({ list, scroller, empty, onResend: (c) => resent.push(c),
                onUnknownRun: () => {}, onWorkingChange: () => {} });
            timeline.loadHistory(history, null);
            for (const frame of frames) timeline.handle(frame);
            const [r1, r2] = list.querySelectorAll(".turn");
            const card = (id) => r1.querySelector(`.tool-card[data-tool-call-id="${id}"]`);
            r2.querySelector(".follow-up[data-status=missed] button").click();
            return {
                turns: list.querySelectorAll(".turn").length,
                users: [...list.querySelectorAll(".turn > .msg.user")].map((n) => n.textContent),
                c1: { cls: card("c1").className, badges: card("c1").querySelector(".tool-badges").textContent,
                      approval: card("c1").querySelector(".tool-approval").textContent,
                      result: card("c1").querySelector(".tool-observation").textContent,
                      time: card("c1").querySelector(".tool-time").textContent },
                c2: { cls: card("c2").className, badges: card("c2").querySelector(".tool-badges").textContent,
                      error: card("c2").querySelector(".tool-error").textContent },
                divider: r1.querySelector(".step.divider")?.textContent,
                reasoning: r1.querySelector(".step.thinking")?.textContent,
                runError: r1.querySelector(".step.run-error")?.textContent,
                answer: r1.querySelector(".answer").innerHTML,
                footer: r1.querySelector(".run-footer").textContent,
                r1Working: r1.classList.contains("working"),
                followUps: [...r2.querySelectorAll(".follow-up")].map((n) => [n.dataset.status, n.textContent]),
                r2Footer: r2.querySelector(".run-footer").textContent,
                resent,
                working: timeline.working,
            };
        }""",
        [HISTORY, CONTRACT_FRAMES],
    )
    assert result["turns"] == 2
    assert result["users"] == ["Pay PO-0002", "Anything else?"]
    assert "succeeded" in result["c1"]["cls"] and "awaiting-approval" not in result["c1"]["cls"]
    assert "OK" in result["c1"]["badges"] and "Approved" in result["c1"]["badges"]
    assert "Approved by ada." in result["c1"]["approval"] and "Budgeted for Q3." in result["c1"]["approval"]
    assert result["c1"]["result"] == "payment 12 created"
    assert result["c1"]["time"] == "0.4 s"
    assert "failed" in result["c2"]["cls"] and "Timed out" in result["c2"]["badges"]
    assert "timed out after 10 s" in result["c2"]["error"]
    assert result["divider"] == "Earlier messages were summarised"
    assert "Pay the supplier first." in result["reasoning"]
    assert result["runError"] == "The model timed out once; retrying."
    assert result["answer"] == "<p>Paid <strong>PO-0002</strong>.</p>"  # the fallback replaced the stream
    assert (
        "Stopped" in result["footer"] and "3 steps" in result["footer"] and "1,234 tokens" in result["footer"]
    )
    assert not result["r1Working"] and not result["working"]
    assert result["followUps"][0][0] == "taken" and "Only unpaid ones." in result["followUps"][0][1]
    assert result["followUps"][1][0] == "missed" and "And the drafts?" in result["followUps"][1][1]
    assert result["resent"] == ["And the drafts?"]
    assert "step limit" in result["r2Footer"]
