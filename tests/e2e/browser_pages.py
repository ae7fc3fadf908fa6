"""Helpers of the browser tests: Playwright's ``expect`` (``None`` without Playwright), pages in browser
contexts of their own, and signing in on the login page the way a user does."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

try:
    from playwright.sync_api import expect
except ImportError:  # the chromium_path fixture then fails (CI) or skips the tests
    expect = None  # type: ignore[assignment]

EXPECT_TIMEOUT_MS = 15000


class PageOpener:
    """Opens pages, each in a new browser context; :func:`page_opener` closes the contexts."""

    def __init__(self, browser: Any, timeout_ms: int) -> None:
        self.browser = browser
        self.timeout_ms = timeout_ms
        self.contexts: list[Any] = []

    def new_page(self, *, width: int, height: int, locale: str = "en-GB", **options: Any) -> Any:
        """A page of a new context with a ``width`` x ``height`` viewport (``options`` go to the context)."""
        context = self.browser.new_context(
            viewport={"width": width, "height": height}, locale=locale, **options
        )
        self.contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(self.timeout_ms)
        return page


@contextmanager
def page_opener(browser: Any, timeout_ms: int = EXPECT_TIMEOUT_MS) -> Iterator[PageOpener]:
    """A :class:`PageOpener` whose contexts are closed on exit; ``expect`` waits ``timeout_ms`` meanwhile."""
    expect.set_options(timeout=timeout_ms)
    opener = PageOpener(browser, timeout_ms)
    try:
        yield opener
    finally:
        for context in opener.contexts:
            context.close()


def submit_sign_in(page: Any, username: str, password: str) -> None:
    """Fill in and submit the login form the page shows."""
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click(".login button[type=submit]")


def sign_in(page: Any, site_url: str, username: str, password: str, landing: str) -> None:
    """Sign in on ``site_url``'s login page and wait to land on ``landing`` (a path)."""
    page.goto(f"{site_url}/login/?next={landing}")
    submit_sign_in(page, username, password)
    page.wait_for_url(f"**{landing}")
