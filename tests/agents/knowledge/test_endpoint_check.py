""" "Check endpoint" checks an embedding endpoint by embedding and a rerank endpoint by reranking, as the
knowledge bases use them, never with the chat probes (which such an endpoint cannot answer); the report
has that one probe, and says what the endpoint answered or why it did not."""

from __future__ import annotations

import pytest

from agents.models import ModelRole
from tests.agents.factories import ModelConfigFactory
from tests.fakes.openai_server import error

pytestmark = pytest.mark.django_db


def checked(client, org, config) -> dict:
    response = client.post(f"/api/v1/orgs/{org.slug}/model-configs/{config.pk}/check/")
    assert response.status_code == 200, response.content
    return response.json()


def test_an_embedding_endpoint_is_checked_by_embedding_a_text(client_for, org, org_admin, scripted_llm):
    config = ModelConfigFactory(
        organization=org,
        base_url=scripted_llm.base_url,
        role=ModelRole.EMBEDDING,
        model="text-embedding-3-small",
    )

    report = checked(client_for(org_admin), org, config)

    (probe,) = report["probes"]
    assert probe["probe"] == "embedding" and probe["status"] == "works"
    assert f"{scripted_llm.embedding_dimension} numbers" in probe["message"]
    assert report["key_verified"] is True and report["abilities"] == {}
    assert len(scripted_llm.embedding_requests) == 1 and scripted_llm.requests == []
    assert "财务总监" in scripted_llm.embedding_requests[0]["input"][0]  # Chinese as well as English


def test_a_rerank_endpoint_is_checked_by_reranking_and_says_whether_it_ranked_well(
    client_for, org, org_admin, scripted_llm
):
    config = ModelConfigFactory(
        organization=org,
        base_url=scripted_llm.base_url,
        role=ModelRole.RERANK,
        provider="jina",
        model="jina-reranker-v2-base-multilingual",
    )

    report = checked(client_for(org_admin), org, config)

    (probe,) = report["probes"]
    assert probe["probe"] == "rerank" and probe["status"] == "works"
    assert probe["message"].startswith("It put the passage that answers the question first")
    assert len(scripted_llm.rerank_requests) == 1 and scripted_llm.requests == []


def test_a_refused_key_is_reported_as_refused_without_chat_probes(client_for, org, org_admin, scripted_llm):
    config = ModelConfigFactory(organization=org, base_url=scripted_llm.base_url, role=ModelRole.EMBEDDING)
    scripted_llm.script_embeddings(error(401, message="Incorrect API key provided"))

    report = checked(client_for(org_admin), org, config)

    (probe,) = report["probes"]
    assert probe["status"] == "refused" and "401" in probe["message"]
    assert report["key_verified"] is False and scripted_llm.requests == []


def test_an_unsendable_key_of_a_rerank_endpoint_lists_its_own_probe_unchecked(
    client_for, org, org_admin, scripted_llm
):
    config = ModelConfigFactory(
        organization=org,
        base_url=scripted_llm.base_url,
        role=ModelRole.RERANK,
        provider="jina",
        api_key="sk-with space",
    )

    report = checked(client_for(org_admin), org, config)

    assert [(p["probe"], p["status"]) for p in report["probes"]] == [("rerank", "not_checked")]
    assert scripted_llm.rerank_requests == []
