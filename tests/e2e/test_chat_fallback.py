"""The chat in a real browser when the agent's model endpoint is down: its fallback (the world's scripted
endpoint) answers and the footer says so."""

from __future__ import annotations

import socket
import sqlite3
import uuid

import pytest

from tests.e2e.browser_pages import expect
from tests.e2e.chat_pages import open_new_chat
from tests.fakes.openai_server import text

pytestmark = pytest.mark.e2e

AGENT = "Purchasing assistant"


def _closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture
def agent_on_a_dead_endpoint(e2e_server):
    """The agent's endpoint is a copy of the world's scripted one on a port nothing listens on, falling back
    to the scripted one (written to the server's database directly; undone afterwards)."""
    primary = uuid.uuid4().hex
    with sqlite3.connect(e2e_server.database, timeout=10) as db:
        columns = [row[1] for row in db.execute("PRAGMA table_info(agents_modelconfig)")]
        (scripted,) = db.execute("SELECT id FROM agents_modelconfig WHERE name = 'scripted'").fetchone()
        overrides = {
            "id": "?",
            "name": "'Primary (down)'",
            "base_url": "?",
            "is_default": "0",
            "fallback_id": "?",
            # Encrypted values are bound to their row: the copy has no key and no headers.
            "api_key": "''",
            "extra_headers": "''",
        }
        select = ", ".join(overrides.get(c, c) for c in columns)
        db.execute(
            f"INSERT INTO agents_modelconfig ({', '.join(columns)}) "  # noqa: S608 - column names of the table
            f"SELECT {select} FROM agents_modelconfig WHERE id = ?",
            (primary, _closed_port_url(), scripted, scripted),
        )
        db.execute("UPDATE agents_agent SET model_config_id = ? WHERE name = ?", (primary, AGENT))
    try:
        yield
    finally:
        with sqlite3.connect(e2e_server.database, timeout=10) as db:
            db.execute("UPDATE agents_agent SET model_config_id = NULL WHERE name = ?", (AGENT,))
            db.execute("DELETE FROM agents_modelconfig WHERE id = ?", (primary,))


def test_the_footer_says_which_fallback_answered(make_page, scripted_llm, agent_on_a_dead_endpoint):
    scripted_llm.script(text("Two orders are drafts."), text("Two orders are drafts."))
    page = make_page()
    open_new_chat(page, AGENT)

    page.fill("#composer-input", "How many orders are drafts?")
    page.press("#composer-input", "Enter")

    expect(page.locator(".answer")).to_have_text("Two orders are drafts.")
    expect(page.locator(".run-footer .fallback-note")).to_have_text("answered by scripted")
