"""The API keys page in Debian's chromium: a member creates a personal key (shown once, working at once
against the API) and revokes it (refused at once)."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from tests.e2e.browser_pages import expect
from tests.e2e.conftest import E2EServer

pytestmark = pytest.mark.e2e


def _api_status(server: E2EServer, raw: str) -> int:
    request = urllib.request.Request(f"{server.url}/api/v1/orgs/", headers={"Authorization": f"Bearer {raw}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_a_member_creates_an_api_key_sees_it_once_and_revokes_it(make_page, e2e_server):
    page = make_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if "Refused" in msg.text else None)

    page.get_by_role("link", name="API keys").click()
    page.wait_for_url("**/api-keys/")
    page.fill("#id_name", "e2e laptop")
    page.get_by_label("Read").check()
    page.get_by_label("Chat").check()
    page.select_option("#id_expires", "30")
    page.get_by_role("button", name="Create API key").click()

    new_key = page.locator("#new-api-key")
    expect(new_key).to_be_visible()
    raw = new_key.input_value()
    assert raw.startswith("apt_")
    row = page.locator("tr", has_text="e2e laptop")
    expect(row.locator(".key-state")).to_have_text("Active")
    assert _api_status(e2e_server, raw) == 200

    page.reload()  # shown once: sending the form again creates nothing and shows no key
    expect(page.locator(".messages")).to_contain_text("already sent")
    expect(page.locator("#new-api-key")).to_have_count(0)
    expect(page.locator("tr", has_text="e2e laptop")).to_have_count(1)
    assert raw not in page.content()

    page.locator("tr", has_text="e2e laptop").get_by_role("button", name="Revoke").click()
    expect(page.locator(".messages")).to_contain_text("revoked")
    expect(page.locator("tr", has_text="e2e laptop").locator(".key-state")).to_have_text("Revoked")
    assert _api_status(e2e_server, raw) == 401
    assert errors == []


def test_the_key_page_shows_the_header_the_whole_key_and_long_names_inside_the_table(make_page):
    page = make_page(width=800)
    page.get_by_role("link", name="API keys").click()
    page.wait_for_url("**/api-keys/")
    expect(page.locator(".key-header")).to_have_text("Authorization: Bearer <key>")
    long_name = "nightly-reconciliation-export-" * 6
    page.fill("#id_name", long_name[:100])
    page.get_by_label("Read").check()
    page.get_by_role("button", name="Create API key").click()

    field = page.locator("#new-api-key")
    expect(field).to_be_visible()
    # The whole key fits its field, underscore included: no horizontal scrolling and a line box tall
    # enough for the glyphs' descenders.
    fits = field.evaluate(
        """input => {
            const style = getComputedStyle(input);
            const lineHeight = parseFloat(style.lineHeight) || 0;
            return input.scrollWidth <= input.clientWidth && lineHeight >= 1.4 * parseFloat(style.fontSize);
        }"""
    )
    assert fits
    table = page.locator("section.key-list table.api-keys").first
    overflow = table.evaluate(
        "table => table.getBoundingClientRect().right - document.documentElement.clientWidth"
    )
    assert overflow <= 0
