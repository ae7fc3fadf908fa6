"""Documents synced from a URL an admin gives: fetched through the SSRF guard (a private address only when
the knowledge base allows its host, on every redirect hop too), indexed like an upload, fetched again at
each re-index (unchanged content ends ready at once, changed content replaces the passages), and each
failed fetch ends failed with its reason; the admin's page adds one."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils.translation import override

from agents.knowledge.failures import failure_message
from agents.knowledge.ingestion import document_ingest
from agents.knowledge.models import Chunk, Document, DocumentStatus
from agents.knowledge.services import DocumentQueued, UrlRefused, document_from_url, document_reindex
from tests.agents.knowledge.world import POLICY_EN, knowledge_base_with
from tests.factories import PASSWORD
from tests.fakes.http_service import Scripted, running_http_service

pytestmark = pytest.mark.django_db


@pytest.fixture
def site():
    with running_http_service() as service:
        yield service


def _allowing_loopback(org, admin):
    kb = knowledge_base_with(org, admin)
    kb.connector.allowed_private_hosts = ["127.0.0.1"]
    kb.connector.save()
    return kb


def _ingested(document):
    document_ingest(document.pk)
    return Document.objects.for_org(document.organization_id).get(pk=document.pk)


def _page(site, body: str, path: str = "/wiki/purchasing") -> None:
    site.script(path, Scripted(body=body, content_type="text/markdown; charset=utf-8"))


def test_a_url_is_fetched_through_the_guard_indexed_and_named_with_its_content_type(site, org, org_admin):
    kb = _allowing_loopback(org, org_admin)
    _page(site, POLICY_EN)

    queued = document_from_url(knowledge_base=kb, url=f"{site.base_url}/wiki/purchasing", actor=org_admin)

    assert isinstance(queued, DocumentQueued) and queued.document.name == "purchasing"
    document = _ingested(queued.document)
    assert document.status == DocumentStatus.READY and document.chunk_count > 0
    assert document.file.name.endswith("/purchasing.md") and document.size == len(POLICY_EN.encode())
    assert len(site.requests_to("/wiki/purchasing")) == 1


def test_a_private_address_is_refused_unless_the_knowledge_base_allows_its_host(site, org, org_admin):
    kb = knowledge_base_with(org, org_admin)

    refused = document_from_url(knowledge_base=kb, url=f"{site.base_url}/wiki/purchasing", actor=org_admin)

    assert isinstance(refused, UrlRefused) and "loopback" in refused.message
    assert not Document.objects.for_org(org).exists() and site.connections == 0


def test_a_redirect_to_a_private_host_is_refused_at_fetch_time_with_its_reason(site, org, org_admin):
    kb = knowledge_base_with(org, org_admin)
    # A public-looking first hop is simulated by allowing the service's host name under another spelling.
    kb.connector.allowed_private_hosts = ["localhost"]
    kb.connector.save()
    url = f"http://localhost:{site.base_url.rsplit(':', 1)[1]}/redirect?to=http://127.0.0.1:9/x"

    queued = document_from_url(knowledge_base=kb, url=url, actor=org_admin)
    assert isinstance(queued, DocumentQueued)
    document = _ingested(queued.document)

    assert document.status == DocumentStatus.FAILED and document.failure_code == "url_refused"
    with override("en"):
        assert "allowed private hosts" in failure_message(document.failure_code, document.failure_figures)


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        (Scripted(status=404, body="{}"), "url_http_error"),
        (Scripted(body="x" * 200, content_type="text/plain"), "url_too_large"),
    ],
)
def test_a_failed_fetch_ends_failed_with_its_reason(site, org, org_admin, settings, reply, code):
    settings.KNOWLEDGE_MAX_FILE_BYTES = 100
    kb = _allowing_loopback(org, org_admin)
    site.script("/wiki/purchasing", reply)

    queued = document_from_url(knowledge_base=kb, url=f"{site.base_url}/wiki/purchasing", actor=org_admin)
    assert isinstance(queued, DocumentQueued)
    document = _ingested(queued.document)

    assert document.status == DocumentStatus.FAILED and document.failure_code == code
    with override("zh-hans"):
        assert "Indexing failed" not in failure_message(document.failure_code, document.failure_figures)


def test_a_reindex_fetches_again_unchanged_content_stays_and_changed_content_replaces(site, org, org_admin):
    kb = _allowing_loopback(org, org_admin)
    url = f"{site.base_url}/wiki/purchasing"
    _page(site, POLICY_EN)
    queued = document_from_url(knowledge_base=kb, url=url, actor=org_admin)
    assert isinstance(queued, DocumentQueued)
    first = _ingested(queued.document)
    stored, passages = first.file.name, set(Chunk.objects.for_org(org).values_list("pk", flat=True))

    _page(site, POLICY_EN)
    same = _ingested(document_reindex(document=first, actor=org_admin))
    assert same.status == DocumentStatus.READY and same.file.name == stored
    assert set(Chunk.objects.for_org(org).values_list("pk", flat=True)) == passages

    _page(site, POLICY_EN.replace("50,000", "80,000"))
    again = document_from_url(knowledge_base=kb, url=url, actor=org_admin)  # the same URL: indexed again
    assert isinstance(again, DocumentQueued) and again.replaced and again.document.pk == first.pk
    changed = _ingested(again.document)
    assert changed.status == DocumentStatus.READY and changed.file.name != stored
    assert "80,000" in " ".join(Chunk.objects.for_org(org).values_list("text", flat=True))
    assert not changed.file.storage.exists(stored)


def test_the_admin_adds_a_document_from_a_url(client, site, org, org_admin):
    kb = _allowing_loopback(org, org_admin)
    assert client.login(username=org_admin.username, password=PASSWORD)

    response = client.post(
        reverse("admin:agents_knowledgebase_change", args=[kb.pk]),
        {
            "organization": str(org.pk),
            "name": "policies",
            "active": "on",
            "allowed_private_hosts": "127.0.0.1",
            "add_url": f"{site.base_url}/wiki/purchasing",
            "documents-TOTAL_FORMS": "0",
            "documents-INITIAL_FORMS": "0",
            "documents-MIN_NUM_FORMS": "0",
            "documents-MAX_NUM_FORMS": "1000",
        },
        follow=True,
    )

    messages = [str(m) for m in response.context["messages"]]
    assert any("will be fetched from" in m for m in messages), messages
    assert Document.objects.for_org(org).get().source_url == f"{site.base_url}/wiki/purchasing"


@pytest.mark.cross_org("knowledge-document-from-url")
def test_the_api_adds_a_document_from_a_url_and_refuses_what_the_guard_refuses(
    site, org, org_admin, member, other_admin
):
    from rest_framework.test import APIClient

    kb = _allowing_loopback(org, org_admin)
    path = f"/api/v1/orgs/{org.slug}/knowledge-bases/{kb.pk}/documents/from-url/"
    admin, plain, stranger = APIClient(), APIClient(), APIClient()
    admin.force_authenticate(org_admin)
    plain.force_authenticate(member)
    stranger.force_authenticate(other_admin)

    created = admin.post(path, {"url": f"{site.base_url}/wiki/purchasing"}, format="json")
    refused = admin.post(path, {"url": "http://169.254.169.254/latest/meta-data"}, format="json")
    forbidden = plain.post(path, {"url": f"{site.base_url}/wiki/other"}, format="json")
    elsewhere = stranger.post(path, {"url": f"{site.base_url}/wiki/other"}, format="json")

    assert created.status_code == 201 and created.json()["name"] == "purchasing"
    assert refused.status_code == 400 and "url" in refused.json()
    assert forbidden.status_code == 403 and elsewhere.status_code == 404
    assert Document.objects.for_org(org).count() == 1


def test_a_url_document_never_fetched_has_no_download_and_its_source_is_shown(client, site, org, org_admin):
    kb = _allowing_loopback(org, org_admin)
    queued = document_from_url(knowledge_base=kb, url=f"{site.base_url}/wiki/purchasing", actor=org_admin)
    assert isinstance(queued, DocumentQueued)
    assert client.login(username=org_admin.username, password=PASSWORD)

    download = client.get(f"/o/{org.slug}/knowledge/documents/{queued.document.pk}/download/")
    page = client.get(reverse("admin:agents_document_change", args=[queued.document.pk]))

    assert download.status_code == 404
    assert page.status_code == 200 and f"{site.base_url}/wiki/purchasing" in page.content.decode()


def test_unchanged_url_content_is_embedded_again_when_the_knowledge_base_needs_vectors(
    site, org, org_admin, scripted_llm
):
    from agents.knowledge.base_services import knowledge_base_update
    from agents.knowledge.models import ChunkVector
    from tests.agents.factories import ModelConfigFactory

    kb = _allowing_loopback(org, org_admin)
    _page(site, POLICY_EN)
    queued = document_from_url(knowledge_base=kb, url=f"{site.base_url}/wiki/purchasing", actor=org_admin)
    assert isinstance(queued, DocumentQueued)
    first = _ingested(queued.document)
    vectors = ModelConfigFactory(organization=org, role="embedding", base_url=scripted_llm.base_url)
    knowledge_base_update(knowledge_base=kb, actor=org_admin, embedding_endpoint=vectors)

    _page(site, POLICY_EN)  # the same content
    again = _ingested(Document.objects.for_org(org).get(pk=first.pk))

    assert again.status == DocumentStatus.READY
    assert ChunkVector.objects.for_org(org).filter(chunk__document_id=first.pk).count() == again.chunk_count
