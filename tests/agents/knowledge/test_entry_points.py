"""Citations reach every entry point: the OpenAI-compatible endpoint (``x_citations``, streamed and not)
and the MCP endpoint (``citations`` in the tool's structured content), through real servers and the
official SDKs, numbered as the answer's ``[n]`` marks cite them, with the document link."""

from __future__ import annotations

from dataclasses import dataclass

import openai
import pytest
from channels.db import database_sync_to_async

from platform_core.identity.api_keys.keys import api_token_issue
from platform_core.models import Role
from tests.agents.factories import AgentFactory, ModelConfigFactory
from tests.agents.knowledge.world import POLICY_EN, indexed, knowledge_base_with
from tests.agents.mcp_endpoint.live import daphne_url, mcp_session  # noqa: F401 (a fixture)
from tests.factories import OrganizationFactory, member_of
from tests.fakes.openai_replies import call, text, tool_calls

pytestmark = pytest.mark.django_db(transaction=True)

ANSWER = "The finance director approves them [1]."


@dataclass
class World:
    key: str
    document_id: str


def _world(llm_base_url: str) -> World:
    org = OrganizationFactory(slug="acme", name="Acme")
    mia = member_of(org, Role.MEMBER, username="mia")
    ModelConfigFactory(organization=org, base_url=llm_base_url, is_default=True)
    kb = knowledge_base_with(org, None)
    document = indexed(kb, "policy.md", POLICY_EN)
    agent = AgentFactory(organization=org, name="Purchasing assistant", exposed_over_mcp=True)
    agent.connectors.add(kb.connector)
    return World(key=api_token_issue(user=mia, name="desktop")[1], document_id=str(document.pk))


def _script(scripted_llm) -> None:
    scripted_llm.script(
        tool_calls(call("policies__search", {"query": "who approves payments over 50,000 CNY"}, id="s1")),
        text(ANSWER),
        text(ANSWER, chunk_size=7),
    )


def _check(citations, world: World) -> None:
    assert [c["number"] for c in citations] == list(range(1, len(citations) + 1))
    first = citations[0]
    assert first["title"] == "policy.md" and first["source_id"] == world.document_id
    assert "finance director" in first["preview"] and "Approvals" in first["location"]
    assert first["url"] == f"/o/acme/knowledge/documents/{world.document_id}/download/"


def test_the_openai_compatible_endpoint_carries_the_citations_streamed_and_not(live_server_url, scripted_llm):
    world = _world(scripted_llm.base_url)
    client = openai.OpenAI(base_url=f"{live_server_url.url}/v1", api_key=world.key, max_retries=0, timeout=30)
    _script(scripted_llm)

    completion = client.chat.completions.create(
        model="acme/Purchasing assistant",
        messages=[{"role": "user", "content": "Who approves big payments?"}],
    )

    assert completion.choices[0].message.content == ANSWER
    _check(completion.model_extra["x_citations"], world)

    _script(scripted_llm)
    chunks = list(
        client.chat.completions.create(
            model="acme/Purchasing assistant",
            messages=[{"role": "user", "content": "Who approves big payments?"}],
            stream=True,
        )
    )
    finals = [c for c in chunks if "x_citations" in (c.model_extra or {})]
    assert len(finals) == 1
    _check(finals[0].model_extra["x_citations"], world)


async def test_the_mcp_endpoint_carries_the_citations_in_its_structured_content(daphne_url, scripted_llm):  # noqa: F811
    world = await database_sync_to_async(_world)(scripted_llm.base_url)
    _script(scripted_llm)

    async with mcp_session(f"{daphne_url}/mcp/orgs/acme/", world.key) as session:
        result = await session.call_tool("purchasing_assistant", {"question": "Who approves big payments?"})

    assert not result.is_error, result
    assert result.structured_content["answer"] == ANSWER
    _check(result.structured_content["citations"], world)
