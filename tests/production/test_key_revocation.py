"""A key revoked through one server closes the streams it has open on the other, through the Redis channel
layer (issue #31): the servers re-read a streaming key only every 60 seconds here, so a stream that
closes within seconds was closed by the revocation's announcement, across processes."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from tests.agents.http_chat.conftest import sse_events
from tests.fakes.openai_server import call, tool_calls
from tests.production.conftest import Stack

CUT_WITHIN = 5.0
PAYMENT = {"amount": 60000, "currency": "CNY"}


def _client(base_url: str, token: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30, trust_env=False
    )


async def test_a_key_revoked_through_one_server_ends_its_sse_stream_on_the_other(stack: Stack, scripted_llm):
    # given a chat key of the requester (made through server A) and a run waiting for an approval
    scripted_llm.script(tool_calls(call("erp__create_payment", PAYMENT, id="pay-revoked")))
    owner = stack.world["requester_token"]
    async with _client(stack.a, owner) as on_a:
        created = await on_a.post("/api/v1/api-keys/", json={"name": "stream", "scopes": ["chat"]})
        assert created.status_code == 201, created.text
        key: dict[str, Any] = created.json()
    conversation = await stack.new_conversation()
    base = f"/api/v1/orgs/{stack.world['org']}/conversations/{conversation}"
    async with _client(stack.a, key["key"]) as with_key_on_a:
        posted = await with_key_on_a.post(f"{base}/messages/", json={"content": "Pay 60000 CNY"})
    assert posted.status_code == 202, posted.text
    run_id = posted.json()["run_id"]

    # and its SSE stream open on server B with that key, showing the pending approval
    events: list[Any] = []
    async with _client(stack.b, key["key"]) as with_key_on_b:
        async with with_key_on_b.stream(
            "GET", f"{base}/runs/{run_id}/stream/", headers={"Accept": "text/event-stream"}
        ) as stream:
            assert stream.status_code == 200
            revoked_at = None
            async with asyncio.timeout(40):  # a stream that outlives its key would never end
                async for event in _events(stream.aiter_lines()):
                    events.append(event)
                    if revoked_at is None and event.event == "approval":
                        # when the owner revokes the key through server A
                        async with _client(stack.a, owner) as on_a:
                            revoked = await on_a.post(f"/api/v1/api-keys/{key['id']}/revoke/")
                        assert revoked.status_code == 200, revoked.text
                        revoked_at = time.monotonic()
            ended_at = time.monotonic()

    # then the stream on B ended within the bound, saying why
    assert revoked_at is not None and ended_at - revoked_at <= CUT_WITHIN
    assert events[-1].event == "error" and events[-1].json["data"]["code"] == "api_key_revoked"
    # (the run goes on without the stream: stop it, as its owner may)
    async with _client(stack.a, owner) as on_a:
        cancelled = await on_a.post(f"{base}/runs/{run_id}/cancel/")
    assert cancelled.status_code in (200, 202)


async def _events(lines: Any) -> Any:
    """``sse_events`` over an async line iterator."""
    buffer: list[str] = []
    async for line in lines:
        buffer.append(line)
        if line == "":
            for event in sse_events(iter(buffer)):
                yield event
            buffer = []
