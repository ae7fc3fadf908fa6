"""The web app on a phone (390 px wide, Debian's chromium): the top bar stays one line (its links scroll
sideways inside it) and no page scrolls sideways (tables keep to the screen)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e

PHONE = {"width": 390, "height": 844}
PAGES = ["/o/acme/chat/", "/api-keys/", "/o/acme/approvals/", "/"]


@pytest.mark.parametrize("path", PAGES)
def test_a_phone_sees_a_one_line_top_bar_and_no_page_scrolls_sideways(make_page, e2e_server, path):
    page = make_page(**PHONE)
    page.goto(f"{e2e_server.url}{path}")
    bar = page.locator("header.topbar")
    height = bar.evaluate("bar => bar.getBoundingClientRect().height")
    line = page.locator("header.topbar .brand").evaluate("brand => brand.getBoundingClientRect().height")
    assert height < 2.5 * line, f"the top bar wraps: {height:.0f} px for a {line:.0f} px line"
    # Every link of the bar can still be reached: the bar scrolls, the page does not.
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    last = page.locator("header.topbar .topnav > *").last
    last.scroll_into_view_if_needed()
    assert last.is_visible()
