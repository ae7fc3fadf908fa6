"""Helpers of the chat's browser tests: opening a new chat the way a user does, and the chat's timeline
mounted on a page of its own."""

from __future__ import annotations

import re

NEW_CHAT_URL = re.compile(r"/o/[\w-]+/chat/new/\?agent=[0-9a-f-]{36}$")
CONVERSATION_URL = re.compile(r"/o/[\w-]+/chat/[0-9a-f-]{36}/$")
# The start of an async ``page.evaluate`` body: imports the chat's ``Timeline`` and mounts an empty
# ``list`` in a ``scroller``, with its ``empty`` notice, for the test to build a Timeline on.
MOUNT_TIMELINE_LIST = """
            const { Timeline } = await import("/static/js/chat-timeline.js");
            const scroller = document.createElement("div");
            const list = document.createElement("ol");
            const empty = document.createElement("p");
            scroller.append(list);
            document.body.append(scroller, empty);
"""


def open_new_chat(page, agent: str = "Purchasing assistant") -> None:
    """Pick ``agent`` on the chat home and wait for its (still empty, unsaved) chat to be ready."""
    from playwright.sync_api import expect

    page.click(f"button.agent-option[data-agent='{agent}']")
    page.wait_for_url(NEW_CHAT_URL, wait_until="commit")
    expect(page.locator("#chat")).to_have_attribute("data-ready", "1")
