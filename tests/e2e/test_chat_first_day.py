"""The chat as a new user meets it (issue 15): example questions, a new chat that stores nothing before
its first message, the message length limit said before sending, long messages collapsed, and the
sidebar's search, rename, delete and relative times. Chromium against daphne and the scripted model."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, time, timedelta

import pytest

from tests.e2e.browser_pages import expect
from tests.e2e.chat_pages import CONVERSATION_URL, open_new_chat
from tests.e2e.conftest import wait_for
from tests.fakes.openai_server import text

pytestmark = pytest.mark.e2e

QUESTIONS = ["Which purchase orders are still drafts?", "Pay 18,600 CNY for purchase order PO-0001"]
LIMIT = 20000  # AGENT_MAX_MESSAGE_CHARS's default, which the e2e server runs with


@pytest.fixture
def example_questions(e2e_server):
    agent = uuid.UUID(e2e_server.world["agent"]).hex
    e2e_server.query(
        "UPDATE agents_agent SET example_questions = ? WHERE id = ?", (json.dumps(QUESTIONS), agent)
    )
    yield QUESTIONS
    e2e_server.query("UPDATE agents_agent SET example_questions = '[]' WHERE id = ?", (agent,))


def conversations(e2e_server) -> int:
    return e2e_server.query("SELECT COUNT(*) FROM agents_conversation")[0][0]


def record_sent(page) -> list[dict]:
    sent: list[dict] = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda payload: sent.append(json.loads(payload))))
    return sent


def test_an_example_question_on_the_chat_home_is_asked_in_a_new_chat_and_answered(
    make_page, e2e_server, scripted_llm, example_questions
):
    scripted_llm.script(text("Two of them."), text("**Two** purchase orders are drafts."))
    page = make_page()
    before = conversations(e2e_server)

    page.click(f".example-question[data-question='{QUESTIONS[0]}']")

    expect(page.locator(".turn .msg.user")).to_have_text(QUESTIONS[0])
    expect(page.locator(".answer strong")).to_have_text("Two")
    page.wait_for_url(CONVERSATION_URL)
    assert conversations(e2e_server) == before + 1
    expect(page.locator("#chat-sidebar .conversation-link.current")).to_contain_text(QUESTIONS[0])
    # A reload shows the same conversation (its title came from the question).
    page.reload()
    expect(page.locator(".chat-title")).to_have_text(QUESTIONS[0])


def test_a_new_chat_stores_nothing_until_its_first_message_and_offers_the_example_questions(
    make_page, e2e_server, scripted_llm, example_questions
):
    scripted_llm.script(text("Done."), text("Paid, once it is approved."))
    page = make_page()
    before = conversations(e2e_server)
    sent = record_sent(page)

    open_new_chat(page)

    chips = page.locator("#chat-empty .example-question")
    expect(chips).to_have_count(2)
    page.reload()  # opening (and reopening) the new chat creates nothing
    expect(page.locator("#chat")).to_have_attribute("data-ready", "1")
    assert conversations(e2e_server) == before and sent == []

    chips.nth(1).click()
    expect(page.locator(".turn .msg.user")).to_have_text(QUESTIONS[1])
    expect(page.locator(".run-footer")).to_be_visible()
    assert conversations(e2e_server) == before + 1
    assert [f["content"] for f in sent if f.get("type") == "message"] == [QUESTIONS[1]]
    expect(page.locator("#chat-empty")).to_be_hidden()


def test_a_message_over_the_limit_is_refused_visibly_before_sending_and_kept_in_the_box(
    make_page, e2e_server
):
    page = make_page()
    open_new_chat(page)
    sent = record_sent(page)
    before = conversations(e2e_server)
    too_long = "x" * (LIMIT + 5)

    page.fill("#composer-input", too_long)
    page.press("#composer-input", "Enter")

    error = page.locator("#composer-error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("20,005")
    expect(error).to_contain_text("20,000")
    assert len(page.input_value("#composer-input")) == LIMIT + 5  # nothing was cut
    expect(page.locator(".turn")).to_have_count(0)
    assert sent == [] and conversations(e2e_server) == before

    # Shortened to the limit, the message fits and the refusal goes away.
    page.press("#composer-input", "End")
    for _ in range(5):
        page.press("#composer-input", "Backspace")
    expect(error).to_be_hidden()


def test_a_very_long_message_collapses_in_the_timeline_and_expands_on_request(make_page, scripted_llm):
    scripted_llm.script(text("Noted."), text("Noted."))
    page = make_page()
    open_new_chat(page)
    long_message = "\n".join(f"Line {n} of a very long message" for n in range(1, 61))

    page.fill("#composer-input", long_message)
    page.press("#composer-input", "Enter")

    bubble = page.locator(".turn .msg.user")
    expect(bubble).to_have_class("msg user collapsible collapsed")
    collapsed = bubble.bounding_box()["height"]
    assert collapsed < 400
    page.click(".msg-expand")
    expect(bubble).not_to_have_class("msg user collapsible collapsed")
    assert bubble.bounding_box()["height"] > collapsed * 2
    expect(page.locator(".msg-expand")).to_have_attribute("aria-expanded", "true")


def _minutes_since_yesterday_noon() -> int:
    """An age that reads "yesterday" at any time of day (the page counts calendar days): yesterday at 12:00
    UTC, 12 to 36 hours ago. A fixed 26 hours read "2 days ago" between midnight and 02:00."""
    now = datetime.now(UTC)
    noon = datetime.combine(now.date() - timedelta(days=1), time(12), tzinfo=UTC)
    return int((now - noon).total_seconds() // 60)


def _add_conversation(e2e_server, title: str, minutes_ago: int) -> str:
    (user_id,) = e2e_server.query(
        "SELECT id FROM auth_user WHERE username = ?", (e2e_server.world["username"],)
    )[0]
    (org_id,) = e2e_server.query("SELECT id FROM platform_core_organization WHERE slug = 'acme'")[0]
    conversation = uuid.uuid4()
    e2e_server.query(
        "INSERT INTO agents_conversation (id, organization_id, user_id, agent_id, title, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, datetime('now', ?), datetime('now', ?))",
        (
            conversation.hex,
            org_id,
            user_id,
            uuid.UUID(e2e_server.world["agent"]).hex,
            title,
            f"-{minutes_ago} minutes",
            f"-{minutes_ago} minutes",
        ),
    )
    return str(conversation)


def test_the_sidebar_searches_renames_and_deletes_conversations(make_page, e2e_server):
    tea = _add_conversation(e2e_server, "Tea supplies for the third quarter", 5)
    desks = _add_conversation(e2e_server, "Standing desks", _minutes_since_yesterday_noon())
    page = make_page()
    listed = page.locator(".conversations .conversation-item")
    expect(page.locator(f".conversation-item[data-id='{tea}'] time")).to_have_text("5 minutes ago")
    expect(page.locator(f".conversation-item[data-id='{desks}'] time")).to_have_text("yesterday")

    # Search asks the server and shows only what matches; clearing it brings the list back.
    page.fill("[data-conversation-search]", "TEA third")
    expect(listed).to_have_count(1)
    expect(listed.first).to_have_attribute("data-id", tea)
    page.fill("[data-conversation-search]", "nothing like this")
    expect(listed).to_have_count(0)
    expect(page.locator("[data-no-match]")).to_be_visible()
    page.fill("[data-conversation-search]", "")
    expect(page.locator(f".conversation-item[data-id='{desks}']")).to_be_visible()

    # Rename in place.
    item = page.locator(f".conversation-item[data-id='{tea}']")
    item.hover()
    item.locator("[data-rename]").click()
    page.fill(".rename-input", "Q3 tea order")
    page.press(".rename-input", "Enter")
    expect(item.locator(".conversation-title")).to_have_text("Q3 tea order")
    wait_for(
        lambda: (
            e2e_server.query("SELECT title FROM agents_conversation WHERE id = ?", (uuid.UUID(tea).hex,))
            == [("Q3 tea order",)]
        ),
        what="the new title to be stored",
    )

    # Delete after a confirmation; dismissing the confirmation keeps it.
    page.once("dialog", lambda dialog: dialog.dismiss())
    item.hover()
    item.locator("[data-delete]").click()
    expect(item).to_be_visible()
    page.once("dialog", lambda dialog: dialog.accept())
    item.locator("[data-delete]").click()
    expect(item).to_have_count(0)
    wait_for(
        lambda: (
            e2e_server.query("SELECT COUNT(*) FROM agents_conversation WHERE id = ?", (uuid.UUID(tea).hex,))[
                0
            ][0]
            == 0
        ),
        what="the conversation to be deleted",
    )


RELATIVE = [
    ("en-GB", 10, "just now"),
    ("en-GB", 5 * 60, "5 minutes ago"),
    ("en-GB", 3 * 3600, "3 hours ago"),
    ("zh-CN", 5 * 60, "5分钟前"),
    ("zh-CN", 3 * 3600, "3小时前"),
]


@pytest.mark.parametrize(("locale", "seconds", "expected"), RELATIVE)
def test_relative_times_read_naturally_in_the_pages_language(make_page, locale, seconds, expected):
    page = make_page(locale=locale)
    result = page.evaluate(
        """async (seconds) => {
            const { relativeTime } = await import("/static/js/chat-time.js");
            const now = new Date(2026, 4, 20, 15, 0, 0);
            return [relativeTime(new Date(now.getTime() - seconds * 1000), now),
                    relativeTime(new Date(2026, 4, 19, 9, 0, 0), now),
                    relativeTime(new Date(2025, 11, 3, 9, 0, 0), now)];
        }""",
        seconds,
    )
    assert result[0] == expected
    assert result[1] == ("yesterday" if locale == "en-GB" else "昨天")
    assert "2025" in result[2]
