"""The agents' MCP server at ``/mcp/orgs/<slug>/``, through a real daphne server and the official MCP SDK
client: tools for the exposed agents only, a call that runs the agent (progress, answer, stored
conversation, run and call log), continuing a conversation, and the refusals (no key, bad key, another
organisation)."""

from __future__ import annotations

from dataclasses import dataclass

import httpx2
import pytest
from channels.db import database_sync_to_async

from agents.models import Agent, Conversation, Message, Run
from connectors.models import ConnectorCallLog
from platform_core.identity.api_keys.keys import api_token_issue
from platform_core.models import Role
from tests.agents.factories import AgentFactory, ModelConfigFactory
from tests.agents.mcp_endpoint.live import mcp_session
from tests.agents.mcp_endpoint.wire import INITIALIZE, MCP_HEADERS
from tests.factories import (
    ConnectorActionFactory,
    OrganizationFactory,
    loopback_erp,
    member_of,
)
from tests.fakes.openai_replies import call, text, tool_calls

pytestmark = pytest.mark.django_db(transaction=True)


@dataclass
class World:
    slug: str
    key: str
    user_id: int
    agent_id: str
    other_key: str


def _world(llm_base_url: str, erp_base_url: str) -> World:
    org = OrganizationFactory(slug="acme", name="Acme")
    mia = member_of(org, Role.MEMBER, username="mia")
    ModelConfigFactory(organization=org, base_url=llm_base_url, is_default=True)
    connector = loopback_erp(org, erp_base_url)
    ConnectorActionFactory(connector=connector, name="list_payments", method="GET", path_template="/payments")
    agent = AgentFactory(
        organization=org,
        name="Purchasing assistant",
        description="Answers questions about payments.",
        instructions="Be brief.",
        exposed_over_mcp=True,
    )
    agent.connectors.add(connector)
    AgentFactory(organization=org, name="Internal helper", exposed_over_mcp=False)
    other = OrganizationFactory(slug="globex", name="Globex")
    gus = member_of(other, Role.ADMIN, username="gus")
    return World(
        slug=org.slug,
        key=api_token_issue(user=mia, name="desktop")[1],
        user_id=mia.pk,
        agent_id=str(agent.pk),
        other_key=api_token_issue(user=gus, name="desktop")[1],
    )


def _stored(conversation_id: str):
    conversation = Conversation.objects.unscoped().get(pk=conversation_id)
    runs = list(Run.objects.unscoped().filter(conversation=conversation).order_by("started_at"))
    messages = list(
        Message.objects.filter(conversation=conversation).order_by("id").values_list("role", "content")
    )
    calls = list(
        ConnectorCallLog.objects.unscoped()
        .filter(conversation_id=conversation_id)
        .values_list("tool_name", "status", "user_id")
    )
    return conversation, runs, messages, calls


async def test_an_mcp_client_lists_the_exposed_agents_and_gets_an_answer_with_progress_stored_like_a_chat(
    daphne_url, scripted_llm, erp
):
    world = await database_sync_to_async(_world)(scripted_llm.base_url, erp.base_url)
    scripted_llm.script(
        tool_calls(call("erp__list_payments", {}, id="c1")),
        text("Two payments."),
        text("There are two payments.", chunk_size=6),
    )
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async with mcp_session(f"{daphne_url}/mcp/orgs/{world.slug}/", world.key) as session:
        listed = await session.list_tools()
        result = await session.call_tool(
            "purchasing_assistant", {"question": "Which payments are there?"}, progress_callback=on_progress
        )

    assert [tool.name for tool in listed.tools] == ["purchasing_assistant"]
    tool = listed.tools[0]
    assert tool.description.startswith("Ask the purchasing assistant.")
    assert tool.input_schema["required"] == ["question"]
    assert not result.is_error, result
    assert result.content[0].text == "There are two payments."
    structured = result.structured_content
    assert structured["status"] == "done" and structured["answer"] == "There are two payments."
    messages = [message for _, message in progress]
    assert "Calling erp__list_payments" in messages and "erp__list_payments answered" in messages
    assert messages[-1] == "Done"
    assert [value for value, _ in progress] == sorted(value for value, _ in progress)

    conversation, runs, stored_messages, calls = await database_sync_to_async(_stored)(
        structured["conversation_id"]
    )
    assert conversation.user_id == world.user_id and str(conversation.agent_id) == world.agent_id
    assert [(str(run.pk), run.status, run.user_id) for run in runs] == [
        (structured["run_id"], "done", world.user_id)
    ]
    assert stored_messages == [
        ("user", "Which payments are there?"),
        ("assistant", "There are two payments."),
    ]
    assert calls == [("erp__list_payments", "ok", world.user_id)]
    assert len(erp.requests_to("/payments")) == 1


async def test_a_call_with_the_conversation_id_continues_that_conversation(daphne_url, scripted_llm, erp):
    world = await database_sync_to_async(_world)(scripted_llm.base_url, erp.base_url)
    scripted_llm.script(text("Hello."), text("Hello."), text("Still here."), text("Still here."))
    url = f"{daphne_url}/mcp/orgs/{world.slug}/"
    async with mcp_session(url, world.key) as session:
        first = await session.call_tool("purchasing_assistant", {"question": "Hi"})
        conversation_id = first.structured_content["conversation_id"]
        second = await session.call_tool(
            "purchasing_assistant", {"question": "Are you there?", "conversation_id": conversation_id}
        )
        foreign = await session.call_tool(
            "purchasing_assistant",
            {"question": "x", "conversation_id": "00000000-0000-0000-0000-000000000000"},
        )

    assert second.structured_content["conversation_id"] == conversation_id
    assert second.content[0].text == "Still here."
    _, runs, messages, _ = await database_sync_to_async(_stored)(conversation_id)
    assert len(runs) == 2
    assert [role for role, _ in messages] == ["user", "assistant", "user", "assistant"]
    assert foreign.is_error and "no such conversation" in foreign.content[0].text.lower()


async def test_an_agent_that_is_not_exposed_cannot_be_called(daphne_url, scripted_llm, erp):
    world = await database_sync_to_async(_world)(scripted_llm.base_url, erp.base_url)
    async with mcp_session(f"{daphne_url}/mcp/orgs/{world.slug}/", world.key) as session:
        result = await session.call_tool("internal_helper", {"question": "Hi"})
    assert result.is_error
    assert await database_sync_to_async(Run.objects.unscoped().count)() == 0


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 401),
        ({"Authorization": "Bearer apt_not-a-real-key"}, 401),
        ({"Authorization": "Basic bWlhOnB3"}, 401),
    ],
    ids=["no key", "unknown key", "not bearer"],
)
async def test_a_request_without_a_valid_key_is_refused_with_401(
    daphne_url, scripted_llm, erp, headers, status
):
    world = await database_sync_to_async(_world)(scripted_llm.base_url, erp.base_url)
    async with httpx2.AsyncClient(trust_env=False) as http:
        response = await http.post(
            f"{daphne_url}/mcp/orgs/{world.slug}/", json=INITIALIZE, headers={**MCP_HEADERS, **headers}
        )
    assert response.status_code == status
    assert response.headers["www-authenticate"].startswith("Bearer")


async def test_a_key_of_another_organisation_is_refused_as_not_found(daphne_url, scripted_llm, erp):
    world = await database_sync_to_async(_world)(scripted_llm.base_url, erp.base_url)
    url = f"{daphne_url}/mcp/orgs/{world.slug}/"
    async with httpx2.AsyncClient(trust_env=False) as http:
        foreign = await http.post(
            url, json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": f"Bearer {world.other_key}"}
        )
        missing = await http.post(
            f"{daphne_url}/mcp/orgs/no-such-org/",
            json=INITIALIZE,
            headers={**MCP_HEADERS, "Authorization": f"Bearer {world.key}"},
        )
    assert foreign.status_code == 404 and missing.status_code == 404
    assert foreign.json() == missing.json()
    with pytest.raises(Exception):  # noqa: B017 (the SDK reports the refused handshake as it sees fit)
        async with mcp_session(url, world.other_key) as session:
            await session.list_tools()


async def test_a_session_cannot_be_used_with_another_key(daphne_url, scripted_llm, erp):
    world = await database_sync_to_async(_world)(scripted_llm.base_url, erp.base_url)
    url = f"{daphne_url}/mcp/orgs/{world.slug}/"
    async with httpx2.AsyncClient(trust_env=False) as http:
        opened = await http.post(
            url, json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": f"Bearer {world.key}"}
        )
        session_id = opened.headers["mcp-session-id"]
        second_key = await database_sync_to_async(_second_key_of_mia)(world.user_id)
        reused = await http.post(
            url,
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
            headers={**MCP_HEADERS, "Authorization": f"Bearer {second_key}", "Mcp-Session-Id": session_id},
        )
    assert opened.status_code == 200
    assert reused.status_code == 404


def _second_key_of_mia(user_id: int) -> str:
    from django.contrib.auth import get_user_model

    return api_token_issue(user=get_user_model().objects.get(pk=user_id), name="other")[1]


async def test_everything_else_is_still_served_by_django(daphne_url):
    async with httpx2.AsyncClient(trust_env=False) as http:
        login = await http.get(f"{daphne_url}/login/")
        near = await http.get(f"{daphne_url}/mcp/")
    assert login.status_code == 200
    assert near.status_code == 404 and "text/html" in near.headers["content-type"]


async def test_an_mcp_call_stops_in_the_callers_interface_language_not_the_questions(
    daphne_url, scripted_llm, erp
):
    # given an agent allowed one iteration and a model that keeps calling tools
    world = await database_sync_to_async(_world)(scripted_llm.base_url, erp.base_url)
    await Agent.objects.unscoped().filter(pk=world.agent_id).aupdate(max_iterations=1)
    scripted_llm.script(tool_calls(call("erp__list_payments", {}, id="c1")))

    # when a caller whose interface is Chinese asks in English
    async with mcp_session(
        f"{daphne_url}/mcp/orgs/{world.slug}/", world.key, accept_language="zh-hans"
    ) as session:
        result = await session.call_tool("purchasing_assistant", {"question": "Which payments are there?"})

    # then the run's stop message is Chinese
    assert "已达到 1 次迭代上限" in result.structured_content["answer"]
    run = await Run.objects.unscoped().aget(pk=result.structured_content["run_id"])
    assert run.language == "zh-hans"
