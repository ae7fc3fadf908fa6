"""A knowledge base with a rerank endpoint: its searches send their best fused passages to the endpoint (the
scripted server's ``/rerank``, which scores a passage by the share of the question's words it holds) and
answer in its order; the call log records each passage's rerank rank and score; the tokens are a usage row
and count in the budgets. An endpoint that fails, times out, answers nonsense, is refused by the SSRF guard
or by a spent budget leaves the fused order, and the outcome says why."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async

from agents import runtime
from agents.engine.hooks import HookRegistry
from agents.engine.react import ReActAgent
from agents.engine.run_context import RunContext
from agents.engine.tool_context import ToolCallContext
from agents.knowledge.models import KnowledgeBase
from agents.knowledge.search import (
    RERANK_DEPTH_MAX,
    RERANK_DEPTH_MIN,
    Found,
    knowledge_search,
    rerank_depth,
    rerank_endpoint_for,
    vector_ranking_for,
)
from agents.knowledge.tool import CitationNumbers, KnowledgeSearchTool
from agents.knowledge.vector_index import Unavailable, vector_backend
from agents.usage.models import UsageRecord
from connectors.models import ConnectorCallLog
from hooks.registry import guard_rail_hooks
from platform_core.models import Role
from tests.agents.factories import (
    AgentFactory,
    BudgetFactory,
    ConversationFactory,
    ModelConfigFactory,
    RunFactory,
)
from tests.agents.knowledge.world import indexed, knowledge_base_with
from tests.factories import member_of
from tests.fakes.embeddings import fake_embedding
from tests.fakes.openai_server import call, error, hang, malformed, text, tool_calls
from tests.fakes.rerank import relevance, rerank_answer

QUESTION = "what does the policy say about suppliers"
# Keyword search drops the question's function words and ranks A first (it holds "policy" and "suppliers");
# the fake reranker counts every word of the question, so B ("what does ... say about suppliers") wins.
PASSAGES = {
    "a.txt": "Policy: suppliers, suppliers, policy.",
    "b.txt": "What does the buyer say about suppliers?",
    "c.txt": "Policy number seven.",
}
TOOL = "policies__search"


@pytest.fixture
def reranker(org, scripted_llm):
    return ModelConfigFactory(
        organization=org, name="reranker", role="rerank", base_url=scripted_llm.base_url, model="rerank-1"
    )


def _knowledge_base(org, admin, **options) -> KnowledgeBase:
    kb = knowledge_base_with(org, admin, **options)
    for name, content in PASSAGES.items():
        indexed(kb, name, content)
    return kb


def _fused(org, user, kb, limit: int = 3) -> list[str]:
    found = knowledge_search(
        organization_id=org.pk, user_id=user.pk, knowledge_base_ids=[kb.pk], query=QUESTION, limit=limit
    )
    assert isinstance(found, Found)
    return [p.document_name for p in found.passages]


def _search(org, user, kb, *, limit: int = 2, query: str = QUESTION):
    context = RunContext(org_id=org.pk, org_slug=org.slug, user_id=user.pk, run_id="", agent_id="")
    tool = KnowledgeSearchTool(kb, kb.connector.actions.get(), context, CitationNumbers())
    return async_to_sync(tool.execute)(ToolCallContext(TOOL, "c1", 1), query=query, limit=limit)


def _documents(result) -> list[str]:
    return [hit["document"] for hit in result.call.retrieved]


def test_the_depth_reranked_is_four_times_the_limit_within_its_bounds():
    assert rerank_depth(1) == RERANK_DEPTH_MIN == 20
    assert rerank_depth(5) == 20
    assert rerank_depth(8) == 32
    assert rerank_depth(10) == rerank_depth(50) == RERANK_DEPTH_MAX == 40


@pytest.mark.django_db
def test_a_search_answers_with_the_fused_passages_in_the_rerank_endpoints_order(
    org, org_admin, reranker, scripted_llm
):
    kb = _knowledge_base(org, org_admin, rerank_endpoint=reranker)
    fused = _fused(org, org_admin, kb)
    assert fused[0] == "a.txt"  # the keyword ranking's best

    result = _search(org, org_admin, kb, limit=2)

    (request,) = scripted_llm.rerank_requests
    assert request["query"] == QUESTION and request["model"] == "rerank-1" and request["top_n"] == 2
    assert request["documents"] == [PASSAGES[name] for name in fused]  # the fused order, all of them
    assert _documents(result) == ["b.txt", "a.txt"]
    assert result.content.startswith("[1] b.txt, p. 1\n" + PASSAGES["b.txt"])
    assert [c.title for c in result.citations] == ["b.txt", "a.txt"]
    assert [c.number for c in result.citations] == [1, 2]
    first, second = result.call.retrieved
    assert first["mode"] == "keyword+rerank" and first["rerank"] == "reranked"
    assert (first["rerank_rank"], second["rerank_rank"]) == (1, 2)
    assert first["rerank_score"] == relevance(QUESTION, PASSAGES["b.txt"])
    assert second["rerank_score"] == relevance(QUESTION, PASSAGES["a.txt"])
    assert first["keyword_rank"] > 1 and second["keyword_rank"] == 1  # the fused ranks are kept too
    assert "text" not in first and PASSAGES["b.txt"] not in json.dumps(result.call.retrieved)


@pytest.mark.django_db
def test_the_rerank_is_a_usage_row_of_the_run_user_and_its_tokens_count_in_the_budgets(
    org, org_admin, reranker, scripted_llm
):
    kb = _knowledge_base(org, org_admin, rerank_endpoint=reranker)
    # One token: the first rerank is admitted (nothing is spent yet), its tokens spend the budget.
    BudgetFactory(organization=org, name="tight", scope="organization", agent=None, limit=1)

    first = _search(org, org_admin, kb)

    row = UsageRecord.objects.for_org(org).get(purpose="rerank")
    expected = rerank_answer(scripted_llm.rerank_requests[0])["usage"]["total_tokens"]
    assert row.total_tokens == row.prompt_tokens == expected and not row.estimated
    assert row.model_config_id == reranker.pk and row.user_id == org_admin.pk and row.model == "rerank-1"
    assert {hit["rerank"] for hit in first.call.retrieved} == {"reranked"}

    second = _search(org, org_admin, kb)

    assert len(scripted_llm.rerank_requests) == 1  # nothing sent past the spent budget
    assert _documents(second) == _fused(org, org_admin, kb, limit=2)
    assert {(hit["rerank"], hit["rerank_failure"]) for hit in second.call.retrieved} == {
        ("fallback", "budget_reached")
    }
    assert UsageRecord.objects.for_org(org).filter(purpose="rerank").count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("reply", "failure"),
    [
        (error(503, message="overloaded"), "unreachable"),
        (hang(5), "unreachable"),
        (error(401, message="invalid api key"), "refused"),
        (error(429, message="slow down"), "rate_limited"),
        (malformed(b"{not json"), "bad_answer"),
        (malformed(json.dumps({"results": [{"index": 0, "relevance_score": 1.0}]}).encode()), "bad_answer"),
    ],
    ids=["server-error", "timeout", "refused", "rate-limited", "not-json", "too-few-results"],
)
def test_an_endpoint_that_fails_leaves_the_fused_order_and_the_log_says_why(
    org, org_admin, reranker, scripted_llm, reply, failure
):
    reranker.timeout = 0.5  # the hang outlasts it
    reranker.save(update_fields=["timeout"])
    kb = _knowledge_base(org, org_admin, rerank_endpoint=reranker)
    scripted_llm.script_rerank(reply)

    result = _search(org, org_admin, kb)

    assert len(scripted_llm.rerank_requests) == 1
    assert _documents(result) == _fused(org, org_admin, kb, limit=2)
    assert {(hit["mode"], hit["rerank"], hit["rerank_failure"]) for hit in result.call.retrieved} == {
        ("keyword", "fallback", failure)
    }
    assert all("rerank_rank" not in hit for hit in result.call.retrieved)
    assert result.citations and not result.is_error
    assert not UsageRecord.objects.for_org(org).filter(purpose="rerank").exists()


@pytest.mark.django_db
def test_a_loopback_endpoint_the_operator_did_not_allow_is_never_called(
    org, org_admin, reranker, scripted_llm, settings
):
    kb = _knowledge_base(org, org_admin, rerank_endpoint=reranker)
    settings.MODEL_ENDPOINT_ALLOWED_PRIVATE_HOSTS = []

    result = _search(org, org_admin, kb)

    assert scripted_llm.rerank_requests == []
    assert _documents(result) == _fused(org, org_admin, kb, limit=2)
    assert {hit["rerank_failure"] for hit in result.call.retrieved} == {"refused"}


@pytest.mark.django_db
def test_a_knowledge_base_without_a_rerank_endpoint_is_not_reranked(org, org_admin, scripted_llm):
    kb = _knowledge_base(org, org_admin)

    result = _search(org, org_admin, kb)

    assert scripted_llm.rerank_requests == []
    assert _documents(result) == _fused(org, org_admin, kb, limit=2)
    assert all("rerank" not in hit and hit["mode"] == "keyword" for hit in result.call.retrieved)


@pytest.mark.django_db
def test_bases_searched_together_are_reranked_only_by_the_one_endpoint_they_all_have(
    org, org_admin, other_org, reranker
):
    other = ModelConfigFactory(organization=org, name="reranker-2", role="rerank")
    first = knowledge_base_with(org, org_admin, name="first", rerank_endpoint=reranker)
    second = knowledge_base_with(org, org_admin, name="second", rerank_endpoint=reranker)
    third = knowledge_base_with(org, org_admin, name="third", rerank_endpoint=other)
    plain = knowledge_base_with(org, org_admin, name="plain")

    def endpoint(*bases):
        return rerank_endpoint_for(organization_id=org.pk, knowledge_base_ids=[kb.pk for kb in bases])

    assert endpoint(first, second) == reranker
    assert endpoint(first, third) is None  # two endpoints: no base judged by another's model
    assert endpoint(first, plain) is None
    reranker.active = False
    reranker.save(update_fields=["active"])
    assert endpoint(first, second) is None
    # A row changed behind the services' back (another role, another organisation's) is not called either.
    chat = ModelConfigFactory(organization=org, role="general")
    foreign = ModelConfigFactory(organization=other_org, role="rerank")
    for wrong in (chat, foreign):
        KnowledgeBase.objects.for_org(org).filter(pk=plain.pk).update(rerank_endpoint=wrong)
        assert endpoint(plain) is None


@pytest.fixture
def searchable_vectors(db):
    backend = vector_backend(fresh=True)
    if isinstance(backend, Unavailable):
        pytest.skip(f"no vector search on this database: {backend.code}")


@pytest.mark.django_db
def test_a_hybrid_search_is_reranked_too(org, org_admin, reranker, scripted_llm, searchable_vectors):
    vectors = ModelConfigFactory(
        organization=org, name="vectors", role="embedding", base_url=scripted_llm.base_url, model="embed-1"
    )
    kb = _knowledge_base(org, org_admin, embedding_endpoint=vectors, rerank_endpoint=reranker)
    hybrid = knowledge_search(
        organization_id=org.pk,
        user_id=org_admin.pk,
        knowledge_base_ids=[kb.pk],
        query=QUESTION,
        limit=3,
        vector_ranking=vector_ranking_for(fake_embedding(QUESTION)),
    )
    assert isinstance(hybrid, Found)

    result = _search(org, org_admin, kb)

    assert scripted_llm.rerank_requests[0]["documents"] == [
        PASSAGES[p.document_name] for p in hybrid.passages
    ]
    assert _documents(result) == ["b.txt", "a.txt"]
    assert {hit["mode"] for hit in result.call.retrieved} == {"hybrid+rerank"}
    assert any(hit["vector_rank"] for hit in result.call.retrieved)


# --- through the engine, its guard rails and the call log ---------------------------------------------------


def _world(org, admin, reranker, llm_base_url: str):
    kb = _knowledge_base(org, admin, name="policies", rerank_endpoint=reranker)
    ModelConfigFactory(organization=org, name="chat", base_url=llm_base_url, is_default=True)
    agent = AgentFactory(organization=org, name="Purchasing assistant")
    agent.connectors.add(kb.connector)
    conversation = ConversationFactory(organization=org, agent=agent, user=admin)
    run = RunFactory(conversation=conversation, user=admin, status="done")
    blueprint = runtime.RunBlueprint(
        run_id=run.pk,
        conversation_id=conversation.pk,
        organization_id=org.pk,
        organization_slug=org.slug,
        user_id=admin.pk,
        username=admin.get_username(),
        agent_id=agent.pk,
        agent_name=agent.name,
        instructions="",
        max_iterations=5,
        completion_check=False,
        connector_ids=[str(kb.connector_id)],
        query="",
        history=[],
        endpoint=runtime.ModelEndpoint(base_url=None, api_key="", model="scripted"),
    )
    return blueprint, runtime.tools_for(blueprint), HookRegistry(guard_rail_hooks(blueprint).hooks)


@pytest.mark.django_db(transaction=True)
async def test_the_call_log_records_each_passages_rerank_rank_and_score(scripted_llm, make_llm):
    from tests.factories import OrganizationFactory

    org = await database_sync_to_async(OrganizationFactory)()
    admin = await database_sync_to_async(member_of)(org, Role.ADMIN)
    reranker = await database_sync_to_async(ModelConfigFactory)(
        organization=org, name="reranker", role="rerank", base_url=scripted_llm.base_url, model="rerank-1"
    )
    blueprint, tools, hooks = await database_sync_to_async(_world)(
        org, admin, reranker, scripted_llm.base_url
    )
    scripted_llm.script(
        tool_calls(call(TOOL, {"query": QUESTION, "limit": 2})),
        text("Buyers say so [1]."),
    )

    agent = ReActAgent(make_llm(), tools, hooks=hooks, max_iterations=5, completion_check=False)
    await agent.run("What does the policy say about suppliers?", metadata=blueprint.context.as_metadata())

    log = await database_sync_to_async(lambda: ConnectorCallLog.objects.for_org(org).get(tool_name=TOOL))()
    assert [(hit["document"], hit["rerank_rank"]) for hit in log.retrieved] == [("b.txt", 1), ("a.txt", 2)]
    assert {hit["mode"] for hit in log.retrieved} == {"keyword+rerank"}
    assert log.retrieved[0]["rerank_score"] == relevance(QUESTION, PASSAGES["b.txt"])
    tool_message = next(m["content"] for m in scripted_llm.requests[1]["messages"] if m["role"] == "tool")
    assert tool_message.startswith("[1] b.txt, p. 1\n")
    row = await database_sync_to_async(lambda: UsageRecord.objects.for_org(org).get(purpose="rerank"))()
    assert row.run_id == blueprint.run_id and row.agent_id == blueprint.agent_id


# --- who may be a knowledge base's rerank endpoint -----------------------------------------------------------


@pytest.mark.django_db
def test_the_services_refuse_another_organisations_rerank_endpoint_or_one_of_another_role(
    org, org_admin, other_org
):
    from django.core.exceptions import ValidationError

    from agents.knowledge.base_services import knowledge_base_update

    foreign = ModelConfigFactory(organization=other_org, role="rerank")
    vectors = ModelConfigFactory(organization=org, role="embedding")
    kb = knowledge_base_with(org, org_admin)

    for wrong in (foreign, vectors):
        with pytest.raises(ValidationError) as refused:
            knowledge_base_update(knowledge_base=kb, actor=org_admin, rerank_endpoint=wrong)
        assert "rerank_endpoint" in refused.value.message_dict
        with pytest.raises(ValidationError) as refused:
            knowledge_base_with(org, org_admin, name="other", rerank_endpoint=wrong)
        assert "rerank_endpoint" in refused.value.message_dict
    kb.refresh_from_db()
    assert kb.rerank_endpoint is None and KnowledgeBase.objects.for_org(org).count() == 1


@pytest.mark.django_db
def test_a_rerank_endpoint_is_neither_an_agents_model_nor_the_chat_default_nor_a_plan_role(org, reranker):
    from django.core.exceptions import ValidationError

    agent = AgentFactory(organization=org, model_config=reranker)
    with pytest.raises(ValidationError) as refused:
        agent.full_clean()
    assert "model_config" in refused.value.message_dict
    reranker.is_default = True
    with pytest.raises(ValidationError) as refused:
        reranker.full_clean()
    assert "is_default" in refused.value.message_dict
    chat = ModelConfigFactory(organization=org, name="chat", role="general")
    roles = runtime.endpoints_by_role(AgentFactory(organization=org, model_config=chat))
    assert "rerank" not in roles and "embedding" not in roles
