"""Every entry point goes through the conversation command layer: a question asked and then cancelled over
the websocket, over HTTP and over MCP reaches the same typed results (and a question over the
OpenAI-compatible endpoint the same ``RunStarted``), each logged by the command layer with the entry point
it came through.

Against the real server (daphne on loopback, in this process, so its log records reach ``caplog``), with
real clients: a websocket client, an HTTP client, the MCP SDK's client and the ``openai`` SDK.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import pytest
from channels.db import database_sync_to_async
from openai import AsyncOpenAI

from agents.conversations.commands import CancelRequested, FollowUpQueued, RunStarted
from agents.models import Conversation, Message, MessageRole, Run, RunStatus
from platform_core.identity.api_keys.keys import api_token_issue
from platform_core.models import Role
from tests.agents.factories import AgentFactory, ConversationFactory, ModelConfigFactory
from tests.agents.mcp_endpoint.live import mcp_session
from tests.factories import OrganizationFactory, member_of
from tests.fakes.openai_server import hang, text
from tests.production.ws_client import is_done, ws_frames_until, ws_open, ws_send

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "Summarise every order since 2019"


@dataclass(frozen=True)
class World:
    org_slug: str
    conversation: Conversation
    token: str


def _world(llm_base_url: str) -> World:
    org = OrganizationFactory(slug="entry")
    mia = member_of(org, Role.MEMBER, username="mia")
    ModelConfigFactory(organization=org, base_url=llm_base_url, is_default=True)
    agent = AgentFactory(
        organization=org, name="Purchasing assistant", instructions="Be brief.", exposed_over_mcp=True
    )
    conversation = ConversationFactory(organization=org, user=mia, agent=agent)
    return World(org.slug, conversation, api_token_issue(user=mia, name="entry-points")[1])


def _results(caplog: pytest.LogCaptureFixture, via: str) -> list[Any]:
    """The typed results the command layer logged for commands that came through ``via``."""
    return [
        record.conversation_result
        for record in caplog.records
        if getattr(record, "via", None) == via and hasattr(record, "conversation_result")
    ]


async def _eventually(condition: Callable[[], Awaitable[bool]]) -> bool:
    for _ in range(300):
        if await condition():
            return True
        await asyncio.sleep(0.05)
    return False


def _run_and_question(conversation: Conversation) -> tuple[Run, Message]:
    run = Run.objects.unscoped().get(conversation=conversation)
    return run, Message.objects.get(run=run, role=MessageRole.USER)


# -- a question and its cancel, through each entry point -------------------------------------------------


async def _over_the_websocket(url: str, world: World, scripted_llm: Any) -> None:
    ws = await ws_open(url, str(world.conversation.pk), world.token)
    await ws_send(ws, {"type": "resume", "after_seq": 0})
    await ws_send(ws, {"type": "message", "content": QUESTION})
    await scripted_llm.until_received(1)
    await ws_send(ws, {"type": "cancel"})
    await ws_frames_until(ws, is_done)
    await ws.close()


async def _over_http(url: str, world: World, scripted_llm: Any) -> None:
    base = f"/api/v1/orgs/{world.org_slug}/conversations/{world.conversation.pk}"
    headers = {"Authorization": f"Bearer {world.token}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=20.0) as client:
        posted = await client.post(f"{base}/messages/", json={"content": QUESTION})
        assert posted.status_code == 202, posted.text
        await scripted_llm.until_received(1)
        cancelled = await client.post(posted.json()["cancel_url"])
        assert cancelled.status_code == 202, cancelled.text


async def _over_mcp(url: str, world: World, scripted_llm: Any) -> None:
    arguments = {"question": QUESTION, "conversation_id": str(world.conversation.pk)}
    async with mcp_session(f"{url}/mcp/orgs/{world.org_slug}/", world.token) as session:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(lambda: session.call_tool("purchasing_assistant", arguments))
            await scripted_llm.until_received(1)
            tasks.cancel_scope.cancel()  # the client gives up on its call


ASK_AND_CANCEL = {"websocket": _over_the_websocket, "http": _over_http, "mcp": _over_mcp}


@pytest.mark.parametrize("via", list(ASK_AND_CANCEL))
async def test_a_question_and_its_cancel_reach_the_same_typed_results_from_every_entry_point(
    via, live_server_url, scripted_llm, caplog
):
    # Given a conversation whose agent's model hangs
    caplog.set_level(logging.DEBUG, logger="agents.conversations")
    scripted_llm.script(hang(30))
    world = await database_sync_to_async(_world)(scripted_llm.base_url)

    # When its user asks a question and then cancels it, through this entry point
    await ASK_AND_CANCEL[via](live_server_url.url, world, scripted_llm)

    # Then the command layer started the run and sent it the cancel, and the run ended cancelled
    run, question = await database_sync_to_async(_run_and_question)(world.conversation)
    assert _results(caplog, via) == [
        RunStarted(run.pk, world.conversation.pk, question.pk),
        CancelRequested(run.pk),
    ]

    async def cancelled() -> bool:
        return (await Run.objects.unscoped().aget(pk=run.pk)).status == RunStatus.CANCELLED

    assert await _eventually(cancelled)


# -- the OpenAI-compatible endpoint: a question, and a follow-up --------------------------------------


async def test_a_question_over_the_openai_compatible_endpoint_goes_through_the_command_layer(
    live_server_url, scripted_llm, caplog
):
    # Given a conversation whose agent's model answers at once
    caplog.set_level(logging.DEBUG, logger="agents.conversations")
    scripted_llm.script(text("Nothing is due."), text("Nothing is due this week."))
    world = await database_sync_to_async(_world)(scripted_llm.base_url)
    client = AsyncOpenAI(
        base_url=f"{live_server_url.url}/v1", api_key=world.token, http_client=httpx.AsyncClient(timeout=20.0)
    )

    # When its user asks through the official SDK, continuing the conversation
    completion = await client.chat.completions.create(
        model=f"{world.org_slug}/Purchasing assistant",
        messages=[{"role": "user", "content": "What is due?"}],
        extra_body={"conversation_id": str(world.conversation.pk)},
    )

    # Then the command layer started the run that answered
    run, question = await database_sync_to_async(_run_and_question)(world.conversation)
    assert completion.choices[0].message.content == "Nothing is due this week."
    assert _results(caplog, "openai") == [RunStarted(run.pk, world.conversation.pk, question.pk)]


async def test_a_message_over_http_while_a_run_works_is_queued_as_its_follow_up(
    live_server_url, scripted_llm, caplog
):
    caplog.set_level(logging.DEBUG, logger="agents.conversations")
    scripted_llm.script(hang(30))
    world = await database_sync_to_async(_world)(scripted_llm.base_url)
    base = f"/api/v1/orgs/{world.org_slug}/conversations/{world.conversation.pk}"
    headers = {"Authorization": f"Bearer {world.token}"}

    async with httpx.AsyncClient(base_url=live_server_url.url, headers=headers, timeout=20.0) as client:
        first = await client.post(f"{base}/messages/", json={"content": QUESTION})
        await scripted_llm.until_received(1)
        second = await client.post(f"{base}/messages/", json={"content": "Only 2024"})
        await client.post(first.json()["cancel_url"])

    follow_up = await Message.objects.aget(injected=True)
    assert second.json()["follow_up"] is True
    assert _results(caplog, "http")[1] == FollowUpQueued(
        follow_up.run_id, world.conversation.pk, follow_up.pk
    )
