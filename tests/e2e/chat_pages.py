"""Helpers of the chat's browser tests: opening a new chat the way a user does."""

from __future__ import annotations

import re

NEW_CHAT_URL = re.compile(r"/o/[\w-]+/chat/new/\?agent=[0-9a-f-]{36}$")
CONVERSATION_URL = re.compile(r"/o/[\w-]+/chat/[0-9a-f-]{36}/$")


def open_new_chat(page, agent: str = "Purchasing assistant") -> None:
    """Pick ``agent`` on the chat home and wait for its (still empty, unsaved) chat to be ready."""
    from playwright.sync_api import expect

    page.click(f"button.agent-option[data-agent='{agent}']")
    page.wait_for_url(NEW_CHAT_URL, wait_until="commit")
    expect(page.locator("#chat")).to_have_attribute("data-ready", "1")
