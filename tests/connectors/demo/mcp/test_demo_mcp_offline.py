"""The offline demo (no model endpoint at all, like a fresh ``make run``) through the demo organisation's
MCP server: the Purchasing assistant answers the MCP example questions with the offline demo model,
calling the demo MCP server through its MCP connector: the read answers, the write waits for approval."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest
from channels.db import database_sync_to_async
from django.contrib.auth import get_user_model
from django.test import override_settings

from agents.demo import DEMO_EXAMPLE_QUESTIONS
from agents.models import RunStatus
from connectors.models import ConnectorCallLog
from platform_core.demo import DEMO_ADMIN, DEMO_ORG_SLUG, demo_seed
from platform_core.identity.api_keys.keys import api_token_issue
from tests.agents.mcp_endpoint.live import call_agent_until, daphne_on_test_database, mcp_session

pytestmark = pytest.mark.django_db(transaction=True)

READ, WRITE = DEMO_EXAMPLE_QUESTIONS[3], DEMO_EXAMPLE_QUESTIONS[4]
OFFLINE_UNSET = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "LLM_MODEL")


@pytest.fixture(scope="module")
def offline_url(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[str]:
    """A daphne server on the test database with no model endpoint configured (the offline demo model)."""
    log_dir = tmp_path_factory.mktemp("daphne-offline")
    with daphne_on_test_database(django_db_blocker, log_dir, unset=OFFLINE_UNSET) as url:
        yield url


def _seed(base_url: str) -> str:
    with override_settings(DEMO_API_BASE_URL=f"{base_url}/demo-api"):
        demo_seed(admin_password="pw-for-tests")
    return api_token_issue(user=get_user_model().objects.get(username=DEMO_ADMIN), name="desktop")[1]


def _runs_in_progress() -> int:
    from agents.models import Run

    return Run.objects.unscoped().filter(status=RunStatus.RUNNING).count()


def _mcp_calls() -> list[tuple[str, str]]:
    return list(
        ConnectorCallLog.objects.unscoped()
        .filter(connector__name="erp_mcp")
        .order_by("id")
        .values_list("tool_name", "status")
    )


async def _ask(session, question: str, *, until: str | None = None) -> tuple[list[str], object]:
    messages: list[str] = []
    if until is None:

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            messages.append(message or "")

        result = await session.call_tool(
            "purchasing_assistant", {"question": question}, progress_callback=on_progress
        )
        return messages, result
    await call_agent_until(session, question, lambda message: until in message, within=30, heard=messages)
    return messages, None


async def test_the_offline_demo_answers_over_mcp_with_an_mcp_read_and_holds_the_mcp_write(offline_url):
    key = await database_sync_to_async(_seed)(offline_url)
    try:
        async with mcp_session(f"{offline_url}/mcp/orgs/{DEMO_ORG_SLUG}/", key) as session:
            read_progress, read = await _ask(session, READ)
            write_progress, _ = await _ask(
                session, WRITE, until="erp_mcp__create_purchase_request is waiting for approval"
            )
    finally:
        # The held run ends (parked or cancelled) before the test database is emptied, whatever happened
        # above: a run still renewing its lease in the server process would deadlock the flush on
        # PostgreSQL (and fail the next test of this worker instead of this one).
        with anyio.fail_after(30):
            while await database_sync_to_async(_runs_in_progress)():  # noqa: ASYNC110  (rows of another process)
                await anyio.sleep(0.2)

    assert not read.is_error, read
    assert "Nordic Office AB" in read.content[0].text
    assert "Calling erp_mcp__find_purchase_orders" in read_progress
    assert any("waiting for approval" in line for line in write_progress)
    assert (await database_sync_to_async(_mcp_calls)())[0] == ("erp_mcp__find_purchase_orders", "ok")
