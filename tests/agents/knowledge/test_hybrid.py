"""A knowledge base with an embedding endpoint: its passages are embedded while indexed (the real SDK
against the loopback endpoint), its searches rank by keyword and by meaning fused, the tokens are
accounted (a usage row, the budgets), a failing endpoint or a spent budget fails the document with its
reason, and another endpoint re-embeds everything in the background."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from django.utils.translation import override

from agents.engine.run_context import RunContext
from agents.engine.tool_context import ToolCallContext
from agents.knowledge.base_services import knowledge_base_update
from agents.knowledge.failures import failure_message
from agents.knowledge.ingestion import document_ingest
from agents.knowledge.models import ChunkVector, Document, DocumentStatus, KnowledgeBase
from agents.knowledge.search import Found, SearchMode, knowledge_search, vector_ranking_for
from agents.knowledge.tool import CitationNumbers, KnowledgeSearchTool
from agents.knowledge.vector_index import Unavailable, vector_backend
from agents.usage.models import UsageRecord
from tests.agents.factories import BudgetFactory, ModelConfigFactory
from tests.agents.knowledge.world import POLICY_EN, POLICY_ZH, indexed, knowledge_base_with
from tests.fakes.embeddings import fake_embedding
from tests.fakes.openai_replies import error

pytestmark = pytest.mark.django_db


@pytest.fixture
def searchable_vectors(db):
    """Vector search on the test database: SQLite in the process, PostgreSQL only with pgvector (the
    system PostgreSQL has none; tests/agents/knowledge/test_vector_index.py covers pgvector's own)."""
    backend = vector_backend(fresh=True)
    if isinstance(backend, Unavailable):
        pytest.skip(f"no vector search on this database: {backend.code}")


@pytest.fixture
def vectors(org, scripted_llm):
    return ModelConfigFactory(
        organization=org, name="vectors", role="embedding", base_url=scripted_llm.base_url, model="embed-1"
    )


def test_passages_are_embedded_while_indexed_and_the_knowledge_base_keeps_the_model_and_dimension(
    org, org_admin, vectors, scripted_llm
):
    kb = knowledge_base_with(org, org_admin, embedding_endpoint=vectors)

    document = indexed(kb, "policy.md", POLICY_EN)

    assert document.status == DocumentStatus.READY
    kb.refresh_from_db()
    assert kb.embedding_model == "embed-1" and kb.embedding_dimension == scripted_llm.embedding_dimension
    assert ChunkVector.objects.for_org(org).filter(knowledge_base=kb).count() == document.chunk_count
    embedded = [text for request in scripted_llm.embedding_requests for text in request["input"]]
    assert any(text.startswith("Purchasing policy > Approvals\n\n") for text in embedded)
    row = UsageRecord.objects.for_org(org).get(purpose="embedding")
    assert row.model_config_id == vectors.pk and row.total_tokens > 0 and row.user_id is None


def test_a_search_ranks_by_keyword_and_by_meaning_fused(org, org_admin, vectors, searchable_vectors):
    kb = knowledge_base_with(org, org_admin, embedding_endpoint=vectors)
    indexed(kb, "policy.md", POLICY_EN)
    indexed(kb, "政策.txt", POLICY_ZH)
    question = "财务总监审批"

    found = knowledge_search(
        organization_id=org.pk,
        user_id=org_admin.pk,
        knowledge_base_ids=[kb.pk],
        query=question,
        vector_ranking=vector_ranking_for(fake_embedding(question)),
    )

    assert isinstance(found, Found) and found.mode == SearchMode.HYBRID
    best = found.passages[0]
    assert best.document_name == "政策.txt" and best.keyword_rank == 1 and best.vector_rank >= 1


def test_the_search_tool_embeds_the_query_counts_its_tokens_and_logs_the_hybrid_ranks(
    org, org_admin, vectors, scripted_llm, searchable_vectors
):
    kb = knowledge_base_with(org, org_admin, embedding_endpoint=vectors)
    indexed(kb, "policy.md", POLICY_EN)
    before = len(scripted_llm.embedding_requests)
    context = RunContext(org_id=org.pk, org_slug=org.slug, user_id=org_admin.pk, run_id="", agent_id="")
    tool = KnowledgeSearchTool(kb, kb.connector.actions.get(), context, CitationNumbers())

    result = async_to_sync(tool.execute)(
        ToolCallContext("policies__search", "c1", 1), query="supplier checks"
    )

    assert scripted_llm.embedding_requests[before:][0]["input"] == ["supplier checks"]
    assert result.call.retrieved and {hit["mode"] for hit in result.call.retrieved} == {"hybrid"}
    assert any(hit["vector_rank"] for hit in result.call.retrieved)
    queries = UsageRecord.objects.for_org(org).filter(purpose="embedding", user_id=org_admin.pk)
    assert queries.count() == 1


def test_a_spent_budget_leaves_the_search_to_keywords_and_fails_an_ingestion_with_its_reason(
    org, org_admin, vectors, scripted_llm
):
    kb = knowledge_base_with(org, org_admin, embedding_endpoint=vectors)
    indexed(kb, "policy.md", POLICY_EN)
    BudgetFactory(organization=org, name="tight", scope="organization", agent=None, limit=1)
    context = RunContext(org_id=org.pk, org_slug=org.slug, user_id=org_admin.pk)
    tool = KnowledgeSearchTool(kb, kb.connector.actions.get(), context, CitationNumbers())
    requests = len(scripted_llm.embedding_requests)

    result = async_to_sync(tool.execute)(
        ToolCallContext("policies__search", "c1", 1), query="supplier checks"
    )

    assert len(scripted_llm.embedding_requests) == requests  # nothing embedded past the budget
    assert {hit["mode"] for hit in result.call.retrieved} == {"keyword"}
    document = indexed_failing(kb, "政策.txt", POLICY_ZH)
    assert document.failure_code == "budget_reached"
    with override("en"):
        assert "“tight” is spent" in failure_message(document.failure_code, document.failure_figures)


def indexed_failing(kb: KnowledgeBase, name: str, text: str) -> Document:
    from django.core.files.base import ContentFile

    from agents.knowledge.services import DocumentQueued, document_upload

    uploaded = document_upload(
        knowledge_base=kb, name=name, content=ContentFile(text.encode()), uploaded_by=None
    )
    assert isinstance(uploaded, DocumentQueued)
    document_ingest(uploaded.document.pk)
    document = Document.objects.for_org(kb.organization_id).get(pk=uploaded.document.pk)
    assert document.status == DocumentStatus.FAILED
    return document


def test_an_endpoint_that_refuses_fails_the_document_with_what_to_check(
    org, org_admin, vectors, scripted_llm
):
    kb = knowledge_base_with(org, org_admin, embedding_endpoint=vectors)
    scripted_llm.script_embeddings(error(401, message="invalid api key"))

    document = indexed_failing(kb, "policy.md", POLICY_EN)

    assert document.failure_code == "embedding_refused"
    with override("en"):
        message = failure_message(document.failure_code, document.failure_figures)
    assert "“vectors” refused the request" in message and "Check its key and model name" in message


def test_another_embedding_endpoint_drops_the_vectors_and_queues_every_document_again(
    org, org_admin, vectors, scripted_llm, django_capture_on_commit_callbacks
):
    kb = knowledge_base_with(org, org_admin, embedding_endpoint=vectors)
    document = indexed(kb, "policy.md", POLICY_EN)
    other = ModelConfigFactory(
        organization=org, name="vectors-2", role="embedding", base_url=scripted_llm.base_url, model="embed-2"
    )
    queued: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("agents.knowledge.tasks.ingest_document.delay", lambda pk: queued.append(pk))
        with django_capture_on_commit_callbacks(execute=True):
            knowledge_base_update(knowledge_base=kb, actor=org_admin, embedding_endpoint=other)

    kb.refresh_from_db()
    assert kb.embedding_model == "" and kb.embedding_dimension is None
    assert not ChunkVector.objects.for_org(org).filter(knowledge_base=kb).exists()
    assert queued == [str(document.pk)]
    document_ingest(document.pk)
    kb.refresh_from_db()
    assert (
        kb.embedding_model == "embed-2"
        and ChunkVector.objects.for_org(org).filter(knowledge_base=kb).exists()
    )


def test_an_embedding_endpoint_is_neither_an_agents_model_nor_the_organisations_chat_default(org, vectors):
    from django.core.exceptions import ValidationError

    from tests.agents.factories import AgentFactory

    agent = AgentFactory(organization=org, model_config=vectors)
    with pytest.raises(ValidationError) as refused:
        agent.full_clean()
    assert "model_config" in refused.value.message_dict
    vectors.is_default = True
    with pytest.raises(ValidationError) as refused:
        vectors.full_clean()
    assert "is_default" in refused.value.message_dict
