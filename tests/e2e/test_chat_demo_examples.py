"""The demo's example questions, clicked as a new admin would on a fresh ``make run`` (no model
endpoint: the offline demo model), each answered the way the issue asks: a table for the read, a
payment held for approval by the demo's policy, and a plan that splits the two-part question."""

from __future__ import annotations

import re

import pytest

from agents.demo import DEMO_EXAMPLE_QUESTIONS
from tests.e2e.browser_pages import expect, submit_sign_in
from tests.e2e.test_demo_stack import DEMO_PASSWORD, demo_server  # noqa: F401  (the fixture)

pytestmark = pytest.mark.e2e

READ, WRITE, PLAN = DEMO_EXAMPLE_QUESTIONS[:3]


@pytest.fixture
def admin_page(demo_server, browser):  # noqa: F811
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-GB")
    page = context.new_page()
    page.set_default_timeout(20000)
    expect.set_options(timeout=20000)
    page.goto(f"{demo_server.url}/login/")
    submit_sign_in(page, "admin", DEMO_PASSWORD)
    page.goto(f"{demo_server.url}/o/demo/chat/")
    try:
        yield page
    finally:
        context.close()


def test_the_demo_read_question_is_answered_with_a_table(admin_page):
    admin_page.click(f".example-question[data-question='{READ}']")

    answer = admin_page.locator(".answer").last
    expect(answer).to_contain_text("Offline demo model")
    table = answer.locator("table")
    expect(table.locator("th").first).to_have_text("Number")
    expect(table.locator("tbody tr")).to_have_count(2)
    expect(table).to_contain_text("Hangzhou Tea Supply Co.")
    assert "{" not in answer.inner_text()


def test_the_demo_payment_question_waits_for_approval(admin_page):
    admin_page.click(f".example-question[data-question='{WRITE}']")

    card = admin_page.locator(".tool-card").first
    expect(card).to_contain_text("erp__create_payment")
    expect(card).to_have_class(re.compile(r"\bawaiting-approval\b"))


def test_the_demo_two_part_question_is_split_by_plan_mode(admin_page):
    admin_page.click(f".example-question[data-question='{PLAN}']")

    steps = admin_page.locator(".plan-round .plan-step")
    expect(steps).to_have_count(3)
    answer = admin_page.locator(".answer").last
    expect(answer.locator("table").first).to_contain_text("PO-0003")


def test_the_demo_policy_question_is_answered_from_the_knowledge_base_with_a_linked_citation(admin_page):
    question = next(q for q in DEMO_EXAMPLE_QUESTIONS if "policy" in q)
    admin_page.click(f".example-question[data-question='{question}']")

    answer = admin_page.locator(".answer").last
    expect(answer).to_contain_text("business licence")
    mark = answer.locator("a.cite").first
    expect(mark).to_have_text("[1]")
    sources = admin_page.locator(".citations").last
    expect(sources).to_contain_text("purchasing-policy.md")
    source = sources.locator(".citation").first
    expect(source).to_contain_text("Suppliers")
    source.locator("summary").click()
    expect(source.locator("blockquote")).to_contain_text("business licence")
    link = source.locator("a").first
    response = admin_page.request.get(admin_page.url.split("/o/")[0] + link.get_attribute("href"))
    assert response.status == 200 and b"business licence" in response.body()
    mark.click()
    assert admin_page.evaluate("location.hash") == f"#{source.get_attribute('id')}"
