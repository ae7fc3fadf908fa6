"""The documentation site as a reader finds it, in Debian's chromium under the platform's strict policy:
the top bar's Help link opens the served docs in the reader's language, the search finds "budget" (预算 in
Chinese) and its result opens the budgets page; the language switch leads to the same page in the other
language. The test saves ``docs/screenshots/docs-search.png`` and ``docs/screenshots/docs-budgets-zh.png``,
which the documentation shows.

The site must be built (``make docs``; CI builds it before the tests): the fixture builds it when missing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.e2e.browser_pages import expect
from tests.e2e.conftest import ROOT

pytestmark = pytest.mark.e2e

DOCS = ROOT / "var" / "docs"
SCREENSHOTS = ROOT / "docs" / "screenshots"


@pytest.fixture(scope="module")
def built_docs() -> Path:
    if not all((DOCS / language / "admin-guide" / "budgets.html").exists() for language in ("en", "zh")):
        done = subprocess.run(["make", "docs"], cwd=ROOT, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return DOCS


def _watch_policy(page) -> list[str]:
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    page.on("console", lambda msg: problems.append(msg.text) if "Refused" in msg.text else None)
    return problems


def _search(page, words: str) -> None:
    box = page.locator("input.sidebar-search").first
    box.fill(words)
    box.press("Enter")
    page.wait_for_url("**/search.html?q=*")
    expect(page.locator("#search-results .search li a").first).to_be_visible()


def test_help_opens_the_docs_and_the_search_finds_the_budgets_page(make_page, built_docs):
    page = make_page(width=1280, height=860)
    problems = _watch_policy(page)

    page.get_by_role("link", name="Help").click()
    page.wait_for_url("**/docs/en/index.html")
    expect(page.get_by_role("heading", level=1, name="Agent platform")).to_be_visible()

    _search(page, "budget")
    page.screenshot(path=str(SCREENSHOTS / "docs-search.png"))
    results = page.locator("#search-results .search li a")
    hit = results.filter(has_text="budgets").first
    expect(hit).to_be_visible()
    hit.click()
    page.wait_for_url("**/docs/en/admin-guide/budgets.html*")
    expect(page.locator("h1").first).to_contain_text("budgets")

    page.get_by_role("link", name="中文").click()
    page.wait_for_url("**/docs/zh/admin-guide/budgets.html")
    expect(page.locator("h1").first).to_contain_text("预算")
    assert problems == []


def test_a_chinese_reader_gets_the_chinese_docs_and_finds_the_budgets_page(make_page, built_docs):
    page = make_page(width=1280, height=860, locale="zh-CN")
    problems = _watch_policy(page)

    page.get_by_role("link", name="帮助").click()
    page.wait_for_url("**/docs/zh/index.html")

    _search(page, "预算")
    hit = page.locator("#search-results .search li a").filter(has_text="预算").first
    expect(hit).to_be_visible()
    hit.click()
    page.wait_for_url("**/docs/zh/admin-guide/budgets.html*")
    expect(page.locator("h1").first).to_contain_text("预算")
    page.screenshot(path=str(SCREENSHOTS / "docs-budgets-zh.png"))

    page.get_by_role("link", name="English").click()
    page.wait_for_url("**/docs/en/admin-guide/budgets.html")
    assert problems == []


def test_the_schema_browser_renders_every_route_from_the_platforms_own_files(make_page, e2e_server):
    page = make_page()
    problems = _watch_policy(page)
    outside: list[str] = []
    page.on(
        "request",
        lambda request: outside.append(request.url) if not request.url.startswith(e2e_server.url) else None,
    )
    page.goto(f"{e2e_server.url}/api/schema/swagger-ui/")
    expect(page.locator(".swagger-ui .opblock").first).to_be_visible()
    # Past some 150 operations Swagger UI draws only those near the screen: scroll down to each route.
    seen: set[str] = set()
    for _ in range(200):
        seen.update(page.locator(".swagger-ui .opblock-summary-path").all_inner_texts())
        if page.evaluate("() => window.innerHeight + window.scrollY >= document.body.scrollHeight - 2"):
            break
        page.mouse.wheel(0, 600)
        page.wait_for_timeout(50)
    schema = page.request.get(f"{e2e_server.url}/api/schema/?format=json").json()
    assert "/api/v1/orgs/{org_slug}/budgets/" in seen and "/api/v1/orgs/{org_slug}/memories/" in seen
    assert set(schema["paths"]) <= seen
    assert outside == []
    assert problems == []
