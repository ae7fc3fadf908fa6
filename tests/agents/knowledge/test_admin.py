"""The knowledge bases' admin: an org admin creates one with its search tool's connector, uploads several
documents at once and reads each outcome, sees why a document failed in their language, re-indexes and
deletes documents through the services; another organisation's admin sees none of it."""

from __future__ import annotations

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from agents.knowledge.ingestion import document_ingest
from agents.knowledge.models import Chunk, Document, DocumentStatus, KnowledgeBase
from connectors.models import Connector, ConnectorKind
from platform_core.models import AuditLog
from tests.agents.knowledge.world import POLICY_EN, POLICY_ZH, indexed, knowledge_base_with
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client, org_admin):
    assert client.login(username=org_admin.username, password=PASSWORD)
    return client


def _form(org, **fields):
    return {
        "organization": str(org.pk),
        "name": "policies",
        "description": "The purchasing policy",
        "active": "on",
        "embedding_endpoint": "",
        "rerank_endpoint": "",
        "documents-TOTAL_FORMS": "0",
        "documents-INITIAL_FORMS": "0",
        "documents-MIN_NUM_FORMS": "0",
        "documents-MAX_NUM_FORMS": "1000",
        **fields,
    }


def _messages(response) -> list[str]:
    return [str(m) for m in response.context["messages"]] if response.context else []


def test_creating_a_knowledge_base_makes_its_search_connector_and_stores_several_files(admin_client, org):
    files = [
        SimpleUploadedFile("policy.md", POLICY_EN.encode()),
        SimpleUploadedFile("政策.txt", POLICY_ZH.encode()),
    ]

    response = admin_client.post(
        reverse("admin:agents_knowledgebase_add"), {**_form(org), "upload": files}, follow=True
    )

    assert response.status_code == 200, response.content[:2000]
    kb = KnowledgeBase.objects.for_org(org).get()
    assert kb.connector.kind == ConnectorKind.KNOWLEDGE and kb.connector.name == "policies"
    assert list(kb.connector.actions.values_list("name", "is_write")) == [("search", False)]
    documents = Document.objects.for_org(org).order_by("name")
    assert [d.name for d in documents] == ["policy.md", "政策.txt"]
    assert {d.status for d in documents} == {DocumentStatus.QUEUED}
    assert sum("waits to be indexed" in m for m in _messages(response)) == 2
    assert AuditLog.objects.filter(organization=org, action="knowledge_base.created").exists()


def test_an_identical_file_is_reported_unchanged_and_a_new_version_as_replacing(admin_client, org, org_admin):
    kb = knowledge_base_with(org, org_admin)
    indexed(kb, "policy.md", POLICY_EN)

    response = admin_client.post(
        reverse("admin:agents_knowledgebase_change", args=[kb.pk]),
        {
            **_form(org, **{"documents-TOTAL_FORMS": "1", "documents-INITIAL_FORMS": "1"}),
            "documents-0-id": str(Document.objects.for_org(org).get().pk),
            "documents-0-knowledge_base": str(kb.pk),
            "upload": [
                SimpleUploadedFile("copy.md", POLICY_EN.encode()),
                SimpleUploadedFile("policy.md", POLICY_EN.replace("50,000", "80,000").encode()),
            ],
        },
        follow=True,
    )

    messages = _messages(response)
    assert any("is already here, as “policy.md”" in m for m in messages), messages
    assert any("replaces the document of that name" in m for m in messages), messages


def test_a_name_taken_by_another_connector_is_a_form_error(admin_client, org):
    Connector.objects.create(
        organization=org, name="policies", kind=ConnectorKind.HTTP, base_url="https://x.example"
    )

    response = admin_client.post(reverse("admin:agents_knowledgebase_add"), _form(org))

    assert response.status_code == 200
    assert "name" in response.context["adminform"].form.errors
    assert not KnowledgeBase.objects.for_org(org).exists()


def test_renaming_and_deactivating_changes_the_search_tools_connector(admin_client, org, org_admin):
    kb = knowledge_base_with(org, org_admin)

    response = admin_client.post(
        reverse("admin:agents_knowledgebase_change", args=[kb.pk]), _form(org, name="handbook", active="")
    )

    assert response.status_code == 302
    kb.connector.refresh_from_db()
    assert kb.connector.name == "handbook" and kb.connector.is_active is False


def test_a_failed_document_shows_why_in_the_admins_language(admin_client, org, org_admin):
    kb = knowledge_base_with(org, org_admin)
    document = indexed(kb, "scan.pdf", b"%PDF-1.4\nnot a real pdf")
    assert document.status == DocumentStatus.FAILED

    english = admin_client.get(reverse("admin:agents_document_changelist"))
    chinese = admin_client.get(reverse("admin:agents_document_changelist"), HTTP_ACCEPT_LANGUAGE="zh-hans")

    assert "The file is damaged and cannot be read" in english.content.decode()
    assert "The file is damaged and cannot be read" not in chinese.content.decode()


def test_reindexing_and_deleting_documents_go_through_the_services(admin_client, org, org_admin):
    kb = knowledge_base_with(org, org_admin)
    first = indexed(kb, "policy.md", POLICY_EN)
    second = indexed(kb, "政策.txt", POLICY_ZH)
    url = reverse("admin:agents_document_changelist")

    admin_client.post(url, {"action": "reindex", ACTION_CHECKBOX_NAME: [str(first.pk)]})
    first.refresh_from_db()
    assert first.status == DocumentStatus.QUEUED and first.version == 2
    document_ingest(first.pk)

    admin_client.post(
        url, {"action": "delete_selected", ACTION_CHECKBOX_NAME: [str(second.pk)], "post": "yes"}
    )
    assert list(Document.objects.for_org(org).values_list("name", flat=True)) == ["policy.md"]
    assert not Chunk.objects.for_org(org).filter(document_id=second.pk).exists()
    assert AuditLog.objects.filter(organization=org, action="document.deleted").exists()


def test_another_organisations_admin_sees_neither_the_knowledge_base_nor_its_documents(
    client, org, org_admin, other_admin
):
    kb = knowledge_base_with(org, org_admin)
    document = indexed(kb, "policy.md", POLICY_EN)
    assert client.login(username=other_admin.username, password=PASSWORD)

    listing = client.get(reverse("admin:agents_knowledgebase_changelist"))
    documents = client.get(reverse("admin:agents_document_changelist"))

    assert listing.context["cl"].result_count == 0 and documents.context["cl"].result_count == 0
    assert "policy.md" not in documents.content.decode()
    assert client.get(reverse("admin:agents_knowledgebase_change", args=[kb.pk])).status_code in (302, 404)
    assert client.get(reverse("admin:agents_document_change", args=[document.pk])).status_code in (302, 404)
    client.post(
        reverse("admin:agents_document_changelist"),
        {"action": "delete_selected", ACTION_CHECKBOX_NAME: [str(document.pk)], "post": "yes"},
    )
    assert Document.objects.for_org(org).filter(pk=document.pk).exists()


def test_the_embedding_endpoint_offers_only_this_organisations_embedding_endpoints(
    admin_client, org, other_org
):
    from tests.agents.factories import ModelConfigFactory

    ModelConfigFactory(organization=org, name="chat", role="general")
    ModelConfigFactory(organization=org, name="vectors", role="embedding")
    ModelConfigFactory(organization=other_org, name="theirs", role="embedding")

    page = admin_client.get(reverse("admin:agents_knowledgebase_add"))

    choices = [label for _value, label in page.context["adminform"].form.fields["embedding_endpoint"].choices]
    assert [str(c).split(" (")[0] for c in choices if str(c) != "---------"] == ["vectors"]


def test_the_rerank_endpoint_offers_only_this_organisations_rerank_endpoints_and_is_saved_audited(
    admin_client, org, org_admin, other_org
):
    from tests.agents.factories import ModelConfigFactory

    ModelConfigFactory(organization=org, name="vectors", role="embedding")
    reranker = ModelConfigFactory(organization=org, name="reranker", role="rerank")
    ModelConfigFactory(organization=other_org, name="theirs", role="rerank")
    kb = knowledge_base_with(org, org_admin)

    page = admin_client.get(reverse("admin:agents_knowledgebase_change", args=[kb.pk]))
    choices = [label for _value, label in page.context["adminform"].form.fields["rerank_endpoint"].choices]
    assert [str(c).split(" (")[0] for c in choices if str(c) != "---------"] == ["reranker"]

    response = admin_client.post(
        reverse("admin:agents_knowledgebase_change", args=[kb.pk]),
        _form(org, rerank_endpoint=str(reranker.pk)),
    )

    assert response.status_code == 302
    kb.refresh_from_db()
    assert kb.rerank_endpoint == reranker
    row = AuditLog.objects.get(organization=org, action="knowledge_base.updated")
    assert row.after["rerank_endpoint"] == str(reranker.pk) and row.before["rerank_endpoint"] is None


def test_the_admin_refuses_another_organisations_rerank_endpoint_or_one_of_another_role(
    admin_client, org, org_admin, other_org
):
    from tests.agents.factories import ModelConfigFactory

    foreign = ModelConfigFactory(organization=other_org, name="theirs", role="rerank")
    vectors = ModelConfigFactory(organization=org, name="vectors", role="embedding")
    kb = knowledge_base_with(org, org_admin)

    for endpoint in (foreign, vectors):
        response = admin_client.post(
            reverse("admin:agents_knowledgebase_change", args=[kb.pk]),
            _form(org, rerank_endpoint=str(endpoint.pk)),
        )
        assert response.status_code == 200
        assert "rerank_endpoint" in response.context["adminform"].form.errors
        created = admin_client.post(
            reverse("admin:agents_knowledgebase_add"),
            _form(org, name="other", rerank_endpoint=str(endpoint.pk)),
        )
        assert created.status_code == 200
    kb.refresh_from_db()
    assert kb.rerank_endpoint is None
    assert list(KnowledgeBase.objects.for_org(org).values_list("pk", flat=True)) == [kb.pk]
