"""What ``make run`` gives a new user: the demo organisation, its admin and agent, the demo ERP connector
and the offline demo model, served by a real daphne, used through a real browser.

The server runs with no model endpoint configured at all (no ``OPENAI_BASE_URL``), exactly like a fresh
``make run``, so the agent answers with the offline demo model and calls the demo ERP over HTTP.
"""

from __future__ import annotations

import sys

import pytest

from tests.e2e.browser_pages import expect, submit_sign_in
from tests.e2e.chat_pages import open_new_chat
from tests.e2e.conftest import E2EServer, free_port, run_checked, server_env

pytestmark = pytest.mark.e2e

DEMO_PASSWORD = "demo-admin-password-1"


@pytest.fixture(scope="module")
def demo_server(chromium_path, tmp_path_factory):
    folder = tmp_path_factory.mktemp("demo-stack")
    database = folder / "demo.sqlite3"
    port = free_port()
    # no model endpoint of the process: the demo answers with its offline model
    env = server_env(
        database,
        {"DEMO_API_BASE_URL": f"http://127.0.0.1:{port}/demo-api"},
        also_drop={"OPENAI_BASE_URL", "OPENAI_API_KEY", "LLM_MODEL"},
    )
    run_checked([sys.executable, "manage.py", "migrate", "--noinput"], env, "migrate")
    out = run_checked(
        [sys.executable, "manage.py", "seed_demo", "--password", DEMO_PASSWORD], env, "seed_demo"
    )
    assert "username: admin" in out and DEMO_PASSWORD in out
    server = E2EServer(port=port, database=database, log_path=folder / "daphne.log", env=env)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_the_demo_admin_chats_with_the_demo_agent_which_calls_the_demo_erp_offline(demo_server, browser):
    context = browser.new_context(viewport={"width": 1280, "height": 820}, locale="en-GB")
    try:
        page = context.new_page()
        page.goto(f"{demo_server.url}/login/")
        submit_sign_in(page, "admin", DEMO_PASSWORD)
        page.goto(f"{demo_server.url}/o/demo/chat/")
        open_new_chat(page)
        page.fill("#composer-input", "Show me purchase order 1")
        page.press("#composer-input", "Enter")
        card = page.locator(".tool-card").first
        expect(card).to_contain_text("erp__get_purchase_order", timeout=15000)
        answer = page.locator(".answer").last
        expect(answer).to_contain_text("Offline demo model", timeout=15000)
        expect(answer).to_contain_text("Shenzhen Bright Electronics", timeout=15000)
    finally:
        context.close()
    rows = demo_server.query("SELECT tool_name, status FROM connectors_connectorcalllog")
    assert rows == [("erp__get_purchase_order", "ok")]
