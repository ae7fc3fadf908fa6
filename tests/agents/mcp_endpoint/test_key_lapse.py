"""A revoked or expired API key loses its MCP sessions: an open stream of the session (the GET stream of
server messages) closes within seconds, and a tool call in flight ends with an error for the client, its
run cancelled as when a client cancels the call."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import anyio
import httpx2
import pytest
from channels.db import database_sync_to_async
from django.utils import timezone

from agents.models import Run
from hooks.models import ApprovalRequest
from platform_core.identity.api_keys.keys import api_key_create, api_token_issue
from tests.agents.mcp_endpoint.live import mcp_session
from tests.agents.mcp_endpoint.payments import payments_over_mcp
from tests.agents.mcp_endpoint.wire import INITIALIZE, MCP_HEADERS
from tests.fakes.http_service import running_http_service
from tests.fakes.openai_replies import call, text, tool_calls

pytestmark = pytest.mark.django_db(transaction=True)

CUT_WITHIN = 5.0  # seconds: issue #31's bound for every kind of stream


def _world(llm_base_url: str, erp_base_url: str, *, expires_in: float | None = None) -> dict[str, Any]:
    world = payments_over_mcp(llm_base_url, erp_base_url)
    expires_at = timezone.now() + timedelta(seconds=expires_in) if expires_in else None
    created = api_key_create(
        name="desktop", scopes=["chat"], owner=world.requester, actor=None, expires_at=expires_at
    )
    return {
        "url_path": world.url_path,
        "key_id": created.key.pk,
        "key": created.raw,
        "expires_at": expires_at,
        "owner_key": api_token_issue(user=world.requester, name="owner")[1],
    }


async def _revoke_over_the_api(daphne_url: str, world: dict[str, Any]) -> float:
    """The owner revokes the key over the REST API of the server; returns when (monotonic)."""
    async with httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {world['owner_key']}"}, trust_env=False
    ) as api:
        revoked = await api.post(f"{daphne_url}/api/v1/api-keys/{world['key_id']}/revoke/")
    assert revoked.status_code == 200, revoked.text
    return time.monotonic()


async def _open_session(http: httpx2.AsyncClient, url: str, key: str) -> dict[str, str]:
    """initialize + initialized by hand; the headers every later request of the session sends."""
    opened = await http.post(url, json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": f"Bearer {key}"})
    assert opened.status_code == 200, opened.text
    headers = {
        **MCP_HEADERS,
        "Authorization": f"Bearer {key}",
        "Mcp-Session-Id": opened.headers["mcp-session-id"],
        "Mcp-Protocol-Version": "2025-06-18",
    }
    initialized = await http.post(
        url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
    )
    assert initialized.status_code == 202, initialized.text
    return headers


@pytest.mark.parametrize("lapse", ["revoked", "expired"])
async def test_the_sessions_open_stream_closes_when_its_key_is_revoked_or_expires(
    daphne_url, scripted_llm, lapse
):
    # given a session with its GET stream of server messages open
    with running_http_service() as erp:
        world = await database_sync_to_async(_world)(
            scripted_llm.base_url, erp.base_url, expires_in=6 if lapse == "expired" else None
        )
    url = daphne_url + world["url_path"]
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=60.0), trust_env=False) as http:
        headers = await _open_session(http, url, world["key"])
        async with http.stream("GET", url, headers={**headers, "Accept": "text/event-stream"}) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            # when the key is revoked, or its expiry passes
            if lapse == "revoked":
                lapsed_at = await _revoke_over_the_api(daphne_url, world)
            else:
                lapsed_at = time.monotonic() + (world["expires_at"] - timezone.now()).total_seconds()
            # then the stream closes within the bound
            with anyio.fail_after(CUT_WITHIN + max(0.0, lapsed_at - time.monotonic())):
                async for _chunk in stream.aiter_bytes():
                    pass
            assert time.monotonic() - lapsed_at <= CUT_WITHIN
        # and the session's key is refused from now on
        again = await http.post(
            url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}, headers=headers
        )
    assert again.status_code == 401


async def test_a_tool_call_in_flight_ends_with_an_error_when_its_key_is_revoked(daphne_url, scripted_llm):
    with running_http_service() as erp:
        world = await database_sync_to_async(_world)(scripted_llm.base_url, erp.base_url)
        scripted_llm.script(tool_calls(call("erp__create_payment", {"amount": 500}, id="p1")), text("Paid."))
        waiting, answered = anyio.Event(), anyio.Event()
        outcome: dict[str, Any] = {}

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            if "waiting for approval" in (message or ""):
                waiting.set()

        async with mcp_session(daphne_url + world["url_path"], world["key"]) as session:
            async with anyio.create_task_group() as tg:

                async def ask() -> None:
                    try:
                        outcome["result"] = await session.call_tool(
                            "purchasing_assistant", {"question": "Pay 500"}, progress_callback=on_progress
                        )
                    except Exception as error:  # the SDK reports the ended call as an error
                        outcome["error"] = error
                    outcome["at"] = time.monotonic()
                    answered.set()

                tg.start_soon(ask)
                with anyio.fail_after(20):
                    await waiting.wait()
                revoked_at = await _revoke_over_the_api(daphne_url, world)
                with anyio.fail_after(CUT_WITHIN + 1):
                    await answered.wait()
            assert outcome["at"] - revoked_at <= CUT_WITHIN
            assert "error" in outcome or outcome["result"].is_error
        # the call's run ended with it, as when a client cancels a call, and nothing was paid
        statuses = await database_sync_to_async(
            lambda: list(Run.objects.unscoped().values_list("status", flat=True))
        )()
        for _ in range(50):
            if statuses == ["cancelled"]:
                break
            await anyio.sleep(0.1)
            statuses = await database_sync_to_async(
                lambda: list(Run.objects.unscoped().values_list("status", flat=True))
            )()
        assert statuses == ["cancelled"]
        assert erp.requests_to("/payments") == []
        pending = await database_sync_to_async(
            lambda: ApprovalRequest.objects.unscoped().filter(status="pending").count()
        )()
        assert pending == 0
