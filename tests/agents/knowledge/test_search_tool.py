"""A knowledge base attached to an agent is a search tool behind the same guard rails as every connector
call: the real engine calls it on the scripted model's request, the model reads numbered passages with
their sources, the call log records the query and what was returned, read-only mode lets it through,
rate limits count it; and a user who may not read the knowledge base gets nothing from it."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async

from agents import runtime
from agents.engine.hooks import HookRegistry
from agents.engine.react import ReActAgent
from agents.knowledge.search import Found, NotReadable, knowledge_search
from connectors.models import CallStatus, ConnectorCallLog
from hooks.registry import guard_rail_hooks
from platform_core.models import Role
from platform_core.services import organization_set_read_only
from tests.agents.factories import AgentFactory, ConversationFactory, ModelConfigFactory, RunFactory
from tests.agents.knowledge.world import POLICY_EN, POLICY_ZH, indexed, knowledge_base_with
from tests.factories import member_of
from tests.fakes.openai_server import call, text, tool_calls
from tests.hooks.factories import RateLimitFactory

TOOL = "policies__search"


def _world(org, admin, *, restricted=False, llm_base_url="http://127.0.0.1:9/v1"):
    kb = knowledge_base_with(org, admin, restricted=restricted)
    indexed(kb, "policy.md", POLICY_EN)
    indexed(kb, "政策.txt", POLICY_ZH)
    ModelConfigFactory(organization=org, base_url=llm_base_url, is_default=True)
    agent = AgentFactory(organization=org, name="Purchasing assistant")
    agent.connectors.add(kb.connector)
    return kb, agent


def _blueprint(org, agent, user) -> runtime.RunBlueprint:
    conversation = ConversationFactory(organization=org, agent=agent, user=user)
    run = RunFactory(conversation=conversation, user=user, status="done")
    return runtime.RunBlueprint(
        run_id=run.pk,
        conversation_id=conversation.pk,
        organization_id=org.pk,
        organization_slug=org.slug,
        user_id=user.pk,
        username=user.get_username(),
        agent_id=agent.pk,
        agent_name=agent.name,
        instructions="",
        max_iterations=5,
        completion_check=False,
        connector_ids=[str(c.pk) for c in agent.connectors.all()],
        query="",
        history=[],
        endpoint=runtime.ModelEndpoint(base_url=None, api_key="", model="scripted"),
    )


async def _run(blueprint, make_llm, question: str):
    def build():
        return runtime.tools_for(blueprint), HookRegistry(guard_rail_hooks(blueprint).hooks)

    tools, hooks = await database_sync_to_async(build)()
    agent = ReActAgent(make_llm(), tools, hooks=hooks, max_iterations=5, completion_check=False)
    return await agent.run(question, metadata=blueprint.context.as_metadata())


def _tool_names(request: dict) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools", [])]


def _tool_message(request: dict) -> str:
    return next(m["content"] for m in request["messages"] if m["role"] == "tool")


@pytest.mark.django_db(transaction=True)
async def test_the_agent_searches_its_knowledge_base_and_reads_numbered_passages_with_their_sources(
    scripted_llm, make_llm
):
    from tests.factories import OrganizationFactory

    org = await database_sync_to_async(OrganizationFactory)()
    admin = await database_sync_to_async(member_of)(org, Role.ADMIN)
    kb, agent = await database_sync_to_async(_world)(org, admin, llm_base_url=scripted_llm.base_url)
    blueprint = await database_sync_to_async(_blueprint)(org, agent, admin)
    scripted_llm.script(
        tool_calls(call(TOOL, {"query": "who approves payments over 50,000 CNY"})),
        text("The finance director approves them [1]."),
    )

    result = await _run(blueprint, make_llm, "Who approves large payments?")

    assert result.answer == "The finance director approves them [1]."
    first, second = scripted_llm.requests[0], scripted_llm.requests[1]
    assert TOOL in _tool_names(first)
    passages = _tool_message(second)
    assert passages.startswith("[1] policy.md, p. 1, Purchasing policy > Approvals\n")
    assert "finance director" in passages.split("\n\n[2]")[0]

    log = await database_sync_to_async(lambda: ConnectorCallLog.objects.for_org(org).get(tool_name=TOOL))()
    assert log.status == CallStatus.OK and log.connector_id == kb.connector_id and not log.is_write
    assert log.arguments == {"query": "who approves payments over 50,000 CNY"}
    assert log.row_count == len(log.retrieved) >= 1
    first_hit = log.retrieved[0]
    assert first_hit["n"] == 1 and first_hit["document"] == "policy.md" and first_hit["score"] > 0
    assert "text" not in first_hit and "finance director" not in json.dumps(log.retrieved)


@pytest.mark.django_db(transaction=True)
async def test_read_only_mode_lets_a_search_through_and_a_rate_limit_counts_it(scripted_llm, make_llm):
    from tests.factories import OrganizationFactory

    org = await database_sync_to_async(OrganizationFactory)()
    admin = await database_sync_to_async(member_of)(org, Role.ADMIN)
    kb, agent = await database_sync_to_async(_world)(org, admin, llm_base_url=scripted_llm.base_url)

    def setup():
        organization_set_read_only(organization=org, actor=None, enabled=True, reason="audit")
        RateLimitFactory(organization=org, name="kb", connector=kb.connector, max_calls=1, period_seconds=600)
        return _blueprint(org, agent, admin)

    blueprint = await database_sync_to_async(setup)()
    scripted_llm.script(
        tool_calls(call(TOOL, {"query": "supplier checks"}, id="c1")),
        tool_calls(call(TOOL, {"query": "supplier licence"}, id="c2")),
        text("done"),
    )

    await _run(blueprint, make_llm, "How are suppliers checked?")

    statuses = await database_sync_to_async(
        lambda: list(
            ConnectorCallLog.objects.for_org(org)
            .order_by("created_at", "id")
            .values_list("status", flat=True)
        )
    )()
    assert statuses == [CallStatus.OK, CallStatus.BLOCKED_RATE_LIMIT]
    last_tool_message = [m for m in scripted_llm.requests[2]["messages"] if m["role"] == "tool"][-1]
    assert "rate limit 'kb' reached" in last_tool_message["content"]


@pytest.mark.django_db
def test_a_member_without_access_to_a_restricted_knowledge_base_gets_no_tool_and_no_passage(org, org_admin):
    kb, agent = _world(org, org_admin, restricted=True)
    outsider = member_of(org, Role.MEMBER, username="outsider")
    reader = member_of(org, Role.MEMBER, username="reader")
    kb.members.add(reader)

    assert TOOL not in runtime.tools_for(_blueprint(org, agent, outsider)).names()
    assert TOOL in runtime.tools_for(_blueprint(org, agent, reader)).names()
    asked = {"organization_id": org.pk, "knowledge_base_ids": [kb.pk], "query": "finance director"}
    assert knowledge_search(user_id=outsider.pk, **asked) == NotReadable()
    found = knowledge_search(user_id=reader.pk, **asked)
    assert isinstance(found, Found) and found.passages


@pytest.mark.django_db
def test_access_taken_away_mid_run_stops_the_next_search(org, org_admin):
    kb, agent = _world(org, org_admin, restricted=True)
    reader = member_of(org, Role.MEMBER, username="reader")
    kb.members.add(reader)
    tool = runtime.tools_for(_blueprint(org, agent, reader)).get(TOOL)
    assert tool is not None

    kb.members.remove(reader)
    from asgiref.sync import async_to_sync

    from agents.engine.tool_context import ToolCallContext

    result = async_to_sync(tool.execute)(ToolCallContext(TOOL, "c1", 1), query="finance director")
    assert result.is_error and "not available" in result.content and "finance" not in result.content


@pytest.mark.django_db
def test_another_organisation_never_gets_a_passage_even_naming_the_knowledge_base(org, org_admin, other_org):
    kb, _agent = _world(org, org_admin)
    stranger = member_of(other_org, Role.ADMIN, username="stranger")

    outcome = knowledge_search(
        organization_id=other_org.pk,
        user_id=stranger.pk,
        knowledge_base_ids=[kb.pk],
        query="finance director",
    )

    assert outcome == NotReadable()


@pytest.mark.django_db
def test_a_deactivated_knowledge_base_is_no_tool_of_any_run(org, org_admin):
    kb, agent = _world(org, org_admin)
    kb.connector.is_active = False
    kb.connector.save()

    assert TOOL not in runtime.tools_for(_blueprint(org, agent, org_admin)).names()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("question", "document", "words"),
    [
        ("Who approves payments over 50,000 CNY?", "policy.md", "finance director"),
        ("How is a new supplier checked?", "policy.md", "business licence"),
        ("超过五万元的付款由谁审批？", "政策.txt", "财务总监"),
        ("新供应商审核什么？", "政策.txt", "营业执照"),
    ],
)
def test_english_and_chinese_questions_find_the_passage_that_answers_them(
    org, org_admin, question, document, words
):
    kb, _agent = _world(org, org_admin)

    found = knowledge_search(
        organization_id=org.pk, user_id=org_admin.pk, knowledge_base_ids=[kb.pk], query=question, limit=1
    )

    assert isinstance(found, Found)
    (best,) = found.passages
    assert best.document_name == document and words in best.text


@pytest.mark.django_db
def test_a_search_can_be_narrowed_to_one_document(org, org_admin):
    kb, _agent = _world(org, org_admin)

    found = knowledge_search(
        organization_id=org.pk,
        user_id=org_admin.pk,
        knowledge_base_ids=[kb.pk],
        query="finance director 财务总监",
        document_name="政策.txt",
    )

    assert isinstance(found, Found) and {p.document_name for p in found.passages} == {"政策.txt"}
