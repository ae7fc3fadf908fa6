"""The knowledge-base REST API: admins manage knowledge bases and their documents; members see only what
they may read; another organisation's knowledge bases and documents are 404 on every route; API keys are
held to their scopes; uploads answer each file with its outcome, in the request's language."""

from __future__ import annotations

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from django.utils.translation import override

from agents.knowledge.failures import failure_message
from agents.knowledge.ingestion import document_ingest
from agents.knowledge.models import Document, DocumentStatus, KnowledgeBase
from connectors.models import Connector, ConnectorKind
from platform_core.models import AuditLog, Role
from tests.agents.factories import ModelConfigFactory
from tests.agents.knowledge.world import POLICY_EN, POLICY_ZH, indexed, knowledge_base_with
from tests.factories import member_of

pytestmark = pytest.mark.django_db

CJK = re.compile(r"[\u4e00-\u9fff]")


def kb_url(org, knowledge_base=None) -> str:
    base = f"/api/v1/orgs/{org.slug}/knowledge-bases/"
    return f"{base}{knowledge_base.pk}/" if knowledge_base is not None else base


def documents_url(org, knowledge_base, document=None, action="") -> str:
    url = f"{kb_url(org, knowledge_base)}documents/"
    if document is not None:
        url += f"{document.pk}/"
    return url + (f"{action}/" if action else "")


def upload(client, org, knowledge_base, *files: tuple[str, bytes], **extra):
    data = {"files": [SimpleUploadedFile(name, content) for name, content in files]}
    return client.post(documents_url(org, knowledge_base), data, format="multipart", **extra)


# --- knowledge bases --------------------------------------------------------------------------------------


def test_an_admin_creates_a_knowledge_base_with_its_search_connector_audited(
    client_for, org_admin, org, member
):
    endpoint = ModelConfigFactory(organization=org, role="embedding")
    response = client_for(org_admin).post(
        kb_url(org),
        {
            "name": "policies",
            "description": "The purchasing policies",
            "embedding_endpoint": str(endpoint.pk),
            "restricted": True,
            "members": [member.pk],
        },
        format="json",
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["name"] == "policies" and body["description"] == "The purchasing policies"
    assert body["is_active"] is True and body["tool_name"] == "policies__search"
    assert body["search_mode"] == "hybrid" and body["embedding_endpoint"] == str(endpoint.pk)
    assert body["restricted"] is True and body["members"] == [member.pk] and body["document_count"] == 0
    knowledge_base = KnowledgeBase.objects.for_org(org).get(pk=body["id"])
    assert (
        knowledge_base.connector.kind == ConnectorKind.KNOWLEDGE
        and str(knowledge_base.connector_id) == (body["connector"])
    )
    assert AuditLog.objects.for_org(org).filter(action="knowledge_base.created", actor=org_admin).count() == 1


@pytest.mark.parametrize(
    ("name", "expected"),
    [("two words", "letters, digits"), ("x" * 41, "40"), ("erp", "already has this name")],
)
def test_a_name_that_cannot_be_a_connector_name_is_a_field_error(client_for, org_admin, org, name, expected):
    Connector.objects.create(organization=org, name="erp")
    response = client_for(org_admin).post(kb_url(org), {"name": name}, format="json")

    assert response.status_code == 400
    assert expected in " ".join(response.json()["name"])
    assert not KnowledgeBase.objects.for_org(org).exists()


def test_an_embedding_endpoint_of_another_organisation_or_of_another_role_is_refused(
    client_for, org_admin, org, other_org
):
    foreign = ModelConfigFactory(organization=other_org, role="embedding")
    chat_model = ModelConfigFactory(organization=org, role="general")
    client = client_for(org_admin)

    for endpoint in (foreign, chat_model):
        response = client.post(
            kb_url(org), {"name": "policies", "embedding_endpoint": str(endpoint.pk)}, format="json"
        )
        assert response.status_code == 400 and "embedding_endpoint" in response.json()
    assert not KnowledgeBase.objects.for_org(org).exists()
    without = client.post(kb_url(org), {"name": "policies", "embedding_endpoint": None}, format="json")
    assert without.status_code == 201 and without.json()["search_mode"] == "keyword"


def test_an_admin_sets_shows_and_clears_a_rerank_endpoint_audited(client_for, org_admin, org):
    reranker = ModelConfigFactory(organization=org, role="rerank")
    other = ModelConfigFactory(organization=org, role="rerank")
    client = client_for(org_admin)

    created = client.post(
        kb_url(org), {"name": "policies", "rerank_endpoint": str(reranker.pk)}, format="json"
    )

    assert created.status_code == 201, created.content
    assert created.json()["rerank_endpoint"] == str(reranker.pk)
    knowledge_base = KnowledgeBase.objects.for_org(org).get()
    assert knowledge_base.rerank_endpoint == reranker
    assert client.get(kb_url(org, knowledge_base)).json()["rerank_endpoint"] == str(reranker.pk)

    changed = client.patch(kb_url(org, knowledge_base), {"rerank_endpoint": str(other.pk)}, format="json")

    assert changed.status_code == 200 and changed.json()["rerank_endpoint"] == str(other.pk)
    row = AuditLog.objects.for_org(org).get(action="knowledge_base.updated")
    assert row.before == {"rerank_endpoint": str(reranker.pk)} and row.after == {
        "rerank_endpoint": str(other.pk)
    }
    cleared = client.patch(kb_url(org, knowledge_base), {"rerank_endpoint": None}, format="json")
    assert cleared.status_code == 200 and cleared.json()["rerank_endpoint"] is None
    knowledge_base.refresh_from_db()
    assert knowledge_base.rerank_endpoint is None


def test_a_rerank_endpoint_of_another_organisation_or_of_another_role_is_refused(
    client_for, org_admin, org, other_org
):
    foreign = ModelConfigFactory(organization=other_org, role="rerank")
    vectors = ModelConfigFactory(organization=org, role="embedding")
    chat_model = ModelConfigFactory(organization=org, role="general")
    knowledge_base = knowledge_base_with(org, org_admin, name="manuals")
    client = client_for(org_admin)

    for endpoint in (foreign, vectors, chat_model):
        created = client.post(
            kb_url(org), {"name": "policies", "rerank_endpoint": str(endpoint.pk)}, format="json"
        )
        assert created.status_code == 400 and "rerank_endpoint" in created.json()
        changed = client.patch(
            kb_url(org, knowledge_base), {"rerank_endpoint": str(endpoint.pk)}, format="json"
        )
        assert changed.status_code == 400 and "rerank_endpoint" in changed.json()
        assert str(other_org.slug) not in changed.content.decode()
    assert list(KnowledgeBase.objects.for_org(org).values_list("connector__name", flat=True)) == ["manuals"]
    knowledge_base.refresh_from_db()
    assert knowledge_base.rerank_endpoint is None
    assert not AuditLog.objects.for_org(org).filter(action="knowledge_base.updated").exists()


def test_only_members_of_the_organisation_can_be_given_access(client_for, org_admin, org, other_admin):
    response = client_for(org_admin).post(
        kb_url(org), {"name": "policies", "restricted": True, "members": [other_admin.pk]}, format="json"
    )

    assert response.status_code == 400 and "members" in response.json()
    assert not KnowledgeBase.objects.for_org(org).exists()


def test_members_list_the_knowledge_bases_they_may_read_and_admins_list_all(
    client_for, org, org_admin, member
):
    outsider = member_of(org, Role.MEMBER, username="otto")
    knowledge_base_with(org, org_admin, name="open")
    knowledge_base_with(org, org_admin, name="shared", restricted=True, members=[member])
    knowledge_base_with(org, org_admin, name="board", restricted=True, members=[org_admin])
    indexed(KnowledgeBase.objects.for_org(org).get(connector__name="open"), "policy.md", POLICY_EN)

    def listed(user):
        body = client_for(user).get(kb_url(org)).json()
        return {kb["name"]: kb for kb in body["results"]}

    as_member = listed(member)
    assert sorted(as_member) == ["open", "shared"]
    assert as_member["open"]["document_count"] == 1
    assert "members" not in as_member["shared"]  # who else may read it is the admins' business
    assert sorted(listed(outsider)) == ["open"]
    as_admin = listed(org_admin)
    assert sorted(as_admin) == ["board", "open", "shared"]
    assert as_admin["shared"]["members"] == [member.pk]


def test_the_list_answers_in_the_same_number_of_queries_for_many_knowledge_bases(
    client_for, org, org_admin, member, django_assert_num_queries
):
    for n in range(3):
        knowledge_base_with(org, org_admin, name=f"kb{n}", restricted=True, members=[member, org_admin])
    client = client_for(org_admin)
    client.get(kb_url(org))  # the key's first use writes its last-use rows
    with django_assert_num_queries(7) as few:
        client.get(kb_url(org))
    for n in range(3, 9):
        knowledge_base_with(org, org_admin, name=f"kb{n}", restricted=True, members=[member, org_admin])
    with django_assert_num_queries(len(few.captured_queries)):
        assert client.get(kb_url(org)).json()["count"] == 9


def test_members_can_neither_create_nor_change_nor_delete_a_knowledge_base(
    client_for, org, org_admin, member
):
    knowledge_base = knowledge_base_with(org, org_admin, name="open")
    client = client_for(member)

    assert client.post(kb_url(org), {"name": "mine"}, format="json").status_code == 403
    assert client.patch(kb_url(org, knowledge_base), {"name": "renamed"}, format="json").status_code == 403
    assert client.delete(kb_url(org, knowledge_base)).status_code == 403
    assert client.get(kb_url(org, knowledge_base)).status_code == 200
    assert [kb.connector.name for kb in KnowledgeBase.objects.for_org(org)] == ["open"]


def test_patch_changes_the_connector_and_the_access_in_one_audit_row(client_for, org, org_admin, member):
    knowledge_base = knowledge_base_with(org, org_admin, name="policies")
    endpoint = ModelConfigFactory(organization=org, role="embedding")

    response = client_for(org_admin).patch(
        kb_url(org, knowledge_base),
        {
            "name": "rules",
            "description": "What buyers must follow",
            "is_active": False,
            "embedding_endpoint": str(endpoint.pk),
            "restricted": True,
            "members": [member.pk],
        },
        format="json",
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["tool_name"] == "rules__search" and body["is_active"] is False
    assert body["restricted"] is True and body["members"] == [member.pk] and body["search_mode"] == "hybrid"
    knowledge_base.refresh_from_db()
    connector = knowledge_base.connector
    connector.refresh_from_db()
    assert (connector.name, connector.description, connector.is_active) == (
        "rules",
        "What buyers must follow",
        False,
    )
    assert list(knowledge_base.members.all()) == [member]
    row = AuditLog.objects.for_org(org).get(action="knowledge_base.updated")
    assert row.actor == org_admin
    assert row.before == {
        "name": "policies",
        "description": "",
        "is_active": True,
        "embedding_endpoint": None,
        "restricted": False,
        "members": [],
    }
    assert row.after["name"] == "rules" and row.after["members"] == [str(member.pk)]


def test_patch_refuses_a_taken_or_malformed_name_on_the_name_field_and_changes_nothing(
    client_for, org, org_admin
):
    knowledge_base = knowledge_base_with(org, org_admin, name="policies")
    knowledge_base_with(org, org_admin, name="manuals")
    client = client_for(org_admin)

    for name in ("manuals", "no spaces"):
        response = client.patch(kb_url(org, knowledge_base), {"name": name}, format="json")
        assert response.status_code == 400 and list(response.json()) == ["name"]
    knowledge_base.connector.refresh_from_db()
    assert knowledge_base.connector.name == "policies"
    assert not AuditLog.objects.for_org(org).filter(action="knowledge_base.updated").exists()
    same = client.patch(kb_url(org, knowledge_base), {"name": "policies"}, format="json")
    assert same.status_code == 200  # its own name is not taken


def test_an_admin_deletes_a_knowledge_base_with_its_connector_and_documents(client_for, org, org_admin):
    knowledge_base = knowledge_base_with(org, org_admin, name="policies")
    indexed(knowledge_base, "policy.md", POLICY_EN)

    assert client_for(org_admin).delete(kb_url(org, knowledge_base)).status_code == 204
    assert not KnowledgeBase.objects.for_org(org).exists()
    assert not Connector.objects.for_org(org).filter(name="policies").exists()
    assert not Document.objects.for_org(org).exists()


# --- documents --------------------------------------------------------------------------------------------


def test_an_admin_uploads_several_files_and_each_is_answered_with_its_outcome(client_for, org, org_admin):
    knowledge_base = knowledge_base_with(org, org_admin)
    client = client_for(org_admin)

    first = upload(
        client, org, knowledge_base, ("policy.md", POLICY_EN.encode()), ("采购.txt", POLICY_ZH.encode())
    )

    assert first.status_code == 201, first.content
    assert [(f["file"], f["outcome"]) for f in first.json()["files"]] == [
        ("policy.md", "queued"),
        ("采购.txt", "queued"),
    ]
    assert all(f["document"]["status"] == "queued" for f in first.json()["files"])

    with override_settings(KNOWLEDGE_MAX_FILE_BYTES=1000):
        second = upload(
            client,
            org,
            knowledge_base,
            ("policy.md", POLICY_EN.encode()),
            ("采购.txt", (POLICY_ZH + "\n补充条款。").encode()),
            ("big.txt", b"x" * 1001),
        )

    assert second.status_code == 201, second.content
    outcomes = {f["file"]: f for f in second.json()["files"]}
    assert outcomes["policy.md"]["outcome"] == "unchanged"
    assert outcomes["采购.txt"]["outcome"] == "replaced" and outcomes["采购.txt"]["document"]["version"] == 2
    assert outcomes["big.txt"]["outcome"] == "too_large" and outcomes["big.txt"]["document"] is None
    assert "1000" in outcomes["big.txt"]["message"] or "1,000" in outcomes["big.txt"]["message"]
    assert sorted(Document.objects.for_org(org).values_list("name", flat=True)) == ["policy.md", "采购.txt"]


def test_an_upload_that_stores_nothing_answers_200_when_unchanged_and_400_when_refused(
    client_for, org, org_admin
):
    knowledge_base = knowledge_base_with(org, org_admin)
    indexed(knowledge_base, "policy.md", POLICY_EN)
    client = client_for(org_admin)

    unchanged = upload(client, org, knowledge_base, ("copy.md", POLICY_EN.encode()))
    assert unchanged.status_code == 200
    assert unchanged.json()["files"][0]["outcome"] == "unchanged"
    assert "policy.md" in unchanged.json()["files"][0]["message"]  # the document that already holds it

    with override_settings(KNOWLEDGE_MAX_FILE_BYTES=10):
        refused = upload(client, org, knowledge_base, ("big.txt", b"x" * 11))
    assert refused.status_code == 400
    line = refused.json()["files"][0]
    assert line["outcome"] == "too_large" and "limit" in line["message"]
    assert Document.objects.for_org(org).count() == 1


def test_an_upload_without_files_is_a_field_error(client_for, org, org_admin):
    knowledge_base = knowledge_base_with(org, org_admin)
    response = client_for(org_admin).post(documents_url(org, knowledge_base), {}, format="multipart")
    assert response.status_code == 400 and "files" in response.json()


def test_an_upload_of_more_files_than_a_request_may_carry_is_a_field_error(client_for, org, org_admin):
    knowledge_base = knowledge_base_with(org, org_admin)
    with override_settings(DATA_UPLOAD_MAX_NUMBER_FILES=2):
        response = upload(
            client_for(org_admin), org, knowledge_base, *[(f"{n}.md", b"# x") for n in range(3)]
        )
    assert response.status_code == 400 and "2" in response.json()["files"][0]
    assert not Document.objects.for_org(org).exists()


def test_the_document_list_shows_status_figures_and_the_failure_in_the_request_language(
    client_for, org, org_admin, member, django_assert_max_num_queries
):
    knowledge_base = knowledge_base_with(org, org_admin)
    ready = indexed(knowledge_base, "policy.md", POLICY_EN, actor=org_admin)
    failed = _failed_document(knowledge_base, org_admin)
    client = client_for(member)

    with django_assert_max_num_queries(8):
        english = {d["name"]: d for d in client.get(documents_url(org, knowledge_base)).json()["results"]}
    chinese = {
        d["name"]: d
        for d in client.get(documents_url(org, knowledge_base), HTTP_ACCEPT_LANGUAGE="zh-hans").json()[
            "results"
        ]
    }

    shown = english["policy.md"]
    assert shown["status"] == "ready" and shown["failure_reason"] == ""
    assert shown["size"] == ready.size and shown["sha256"] == ready.sha256 and shown["version"] == 1
    assert shown["page_count"] == 1 and shown["chunk_count"] == ready.chunk_count > 0
    assert shown["uploaded_by"] == org_admin.username and shown["indexed_at"]
    assert (
        english["scan.pdf"]["status"] == "failed"
        and english["scan.pdf"]["failure_code"] == failed.failure_code
    )
    with override("en"):
        assert english["scan.pdf"]["failure_reason"] == failure_message(
            failed.failure_code, failed.failure_figures
        )
    assert CJK.search(chinese["scan.pdf"]["failure_reason"]), chinese["scan.pdf"]["failure_reason"]


def test_upload_outcomes_are_written_in_the_request_language(client_for, org, org_admin):
    knowledge_base = knowledge_base_with(org, org_admin)
    response = upload(
        client_for(org_admin),
        org,
        knowledge_base,
        ("policy.md", POLICY_EN.encode()),
        HTTP_ACCEPT_LANGUAGE="zh-hans",
    )
    assert CJK.search(response.json()["files"][0]["message"])


def test_an_admin_reindexes_a_document_as_a_new_version_audited(client_for, org, org_admin):
    knowledge_base = knowledge_base_with(org, org_admin)
    document = indexed(knowledge_base, "policy.md", POLICY_EN)

    response = client_for(org_admin).post(documents_url(org, knowledge_base, document, "reindex"))

    assert response.status_code == 200
    assert response.json()["status"] == "queued" and response.json()["version"] == 2
    assert AuditLog.objects.for_org(org).filter(action="document.reindexed", actor=org_admin).exists()


def test_an_admin_deletes_a_document_and_its_file(
    client_for, org, org_admin, django_capture_on_commit_callbacks
):
    knowledge_base = knowledge_base_with(org, org_admin)
    document = indexed(knowledge_base, "policy.md", POLICY_EN)
    storage, stored = document.file.storage, document.file.name

    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(org_admin).delete(documents_url(org, knowledge_base, document))

    assert response.status_code == 204
    assert not Document.objects.for_org(org).exists() and not storage.exists(stored)


# --- who sees what ----------------------------------------------------------------------------------------


def test_a_member_without_access_to_a_restricted_knowledge_base_learns_nothing_of_it(
    client_for, org, org_admin, member
):
    """Reads are the 404 of a missing knowledge base; writes are refused by role before any lookup, so
    their 403 is the same for a knowledge base that does not exist."""
    knowledge_base = knowledge_base_with(
        org, org_admin, name="board-minutes", restricted=True, members=[org_admin]
    )
    document = indexed(knowledge_base, "secret-merger.md", POLICY_EN)
    client = client_for(member)

    reads = [
        kb_url(org, knowledge_base),
        documents_url(org, knowledge_base),
        documents_url(org, knowledge_base, document),
        documents_url(org, knowledge_base, document, "download"),
    ]
    for url in reads:
        response = client.get(url)
        assert response.status_code == 404, url
        assert b"board-minutes" not in response.content and b"secret-merger" not in response.content
    listed = client.get(kb_url(org)).content
    assert b"board-minutes" not in listed

    writes = [
        ("patch", kb_url(org, knowledge_base)),
        ("delete", kb_url(org, knowledge_base)),
        ("post", documents_url(org, knowledge_base)),
        ("post", documents_url(org, knowledge_base, document, "reindex")),
        ("delete", documents_url(org, knowledge_base, document)),
    ]
    for method, url in writes:
        response = getattr(client, method)(url, {}, format="json")
        assert response.status_code == 403, (method, url)
        assert b"board-minutes" not in response.content
    document.refresh_from_db()
    assert document.version == 1 and KnowledgeBase.objects.for_org(org).count() == 1


def test_a_member_with_access_reads_the_documents_of_a_restricted_knowledge_base(
    client_for, org, org_admin, member
):
    knowledge_base = knowledge_base_with(org, org_admin, restricted=True, members=[member])
    document = indexed(knowledge_base, "policy.md", POLICY_EN)
    client = client_for(member)

    assert client.get(kb_url(org, knowledge_base)).status_code == 200
    assert [d["id"] for d in client.get(documents_url(org, knowledge_base)).json()["results"]] == [
        str(document.pk)
    ]
    assert client.get(documents_url(org, knowledge_base, document)).status_code == 200
    download = client.get(documents_url(org, knowledge_base, document, "download"))
    assert download.status_code == 200 and b"".join(download.streaming_content) == POLICY_EN.encode()


def test_an_admin_manages_a_restricted_knowledge_base_but_reads_its_files_only_as_a_member(
    client_for, org, org_admin, member
):
    knowledge_base = knowledge_base_with(org, org_admin, restricted=True, members=[member])
    document = indexed(knowledge_base, "policy.md", POLICY_EN)
    client = client_for(org_admin)

    assert client.get(documents_url(org, knowledge_base, document)).status_code == 200
    assert client.get(documents_url(org, knowledge_base, document, "download")).status_code == 404
    client.patch(kb_url(org, knowledge_base), {"members": [member.pk, org_admin.pk]}, format="json")
    assert client.get(documents_url(org, knowledge_base, document, "download")).status_code == 200


ROUTES = [
    ("get", "list"),
    ("post", "list"),
    ("get", "detail"),
    ("patch", "detail"),
    ("delete", "detail"),
    ("get", "documents"),
    ("post", "documents"),
    ("get", "document"),
    ("delete", "document"),
    ("post", "reindex"),
    ("get", "download"),
]


def _route(org, kind, knowledge_base, document) -> str:
    return {
        "list": kb_url(org),
        "detail": kb_url(org, knowledge_base),
        "documents": documents_url(org, knowledge_base),
        "document": documents_url(org, knowledge_base, document),
        "reindex": documents_url(org, knowledge_base, document, "reindex"),
        "download": documents_url(org, knowledge_base, document, "download"),
    }[kind]


@pytest.mark.cross_org(
    "knowledge-base-list",
    "knowledge-base-detail",
    "knowledge-document-list",
    "knowledge-document-detail",
    "knowledge-document-reindex",
    "knowledge-document-download",
)
@pytest.mark.parametrize(("method", "kind"), ROUTES, ids=[f"{m}-{k}" for m, k in ROUTES])
def test_another_organisations_knowledge_bases_are_404_on_every_route(
    client_for, org, org_admin, other_org, other_admin, method, kind
):
    foreign = knowledge_base_with(other_org, other_admin, name="globex-secrets")
    foreign_document = indexed(foreign, "globex-plan.md", POLICY_EN)
    own = knowledge_base_with(org, org_admin, name="acme")
    client = client_for(org_admin)

    # Through the caller's own organisation: another organisation's ids are missing ones.
    if kind != "list":
        response = getattr(client, method)(_route(org, kind, foreign, foreign_document), {}, format="json")
        assert response.status_code == 404
        assert b"globex" not in response.content
    # Through the other organisation's slug: the organisation itself is missing.
    response = getattr(client, method)(_route(other_org, kind, foreign, foreign_document), {}, format="json")
    assert response.status_code == 404 and b"globex" not in response.content
    # Another organisation's admin through ours, with our ids: the same.
    response = getattr(client_for(other_admin), method)(
        _route(org, kind, own, foreign_document), {}, format="json"
    )
    assert response.status_code == 404

    if method == "get" and kind == "list":
        assert [kb["name"] for kb in client.get(kb_url(org)).json()["results"]] == ["acme"]
    foreign_document.refresh_from_db()
    assert foreign_document.version == 1 and foreign.connector.name == "globex-secrets"
    assert KnowledgeBase.objects.for_org(other_org).count() == 1
    assert Document.objects.for_org(other_org).count() == 1


def test_a_document_is_found_only_under_its_own_knowledge_base(client_for, org, org_admin):
    first = knowledge_base_with(org, org_admin, name="first")
    second = knowledge_base_with(org, org_admin, name="second")
    document = indexed(first, "policy.md", POLICY_EN)
    client = client_for(org_admin)

    for action in ("", "download"):
        assert client.get(documents_url(org, second, document, action)).status_code == 404
    assert client.delete(documents_url(org, second, document)).status_code == 404
    assert Document.objects.for_org(org).filter(pk=document.pk).exists()


# --- API keys ---------------------------------------------------------------------------------------------


def test_an_api_key_reads_with_the_read_scope_and_changes_only_with_the_admin_scope(
    key_client, org, org_admin
):
    knowledge_base = knowledge_base_with(org, org_admin)
    document = indexed(knowledge_base, "policy.md", POLICY_EN)
    reader = key_client(org_admin, ["read"])
    chatter = key_client(org_admin, ["chat"])
    admin = key_client(org_admin, ["read", "admin"])

    for url in (
        kb_url(org),
        documents_url(org, knowledge_base),
        documents_url(org, knowledge_base, document, "download"),
    ):
        assert reader.get(url).status_code == 200, url
        assert chatter.get(url).status_code == 403, url
    refused = [
        reader.post(kb_url(org), {"name": "new"}, format="json"),
        reader.patch(kb_url(org, knowledge_base), {"name": "renamed"}, format="json"),
        upload(reader, org, knowledge_base, ("more.md", b"# More")),
        reader.post(documents_url(org, knowledge_base, document, "reindex")),
        reader.delete(documents_url(org, knowledge_base, document)),
        upload(chatter, org, knowledge_base, ("more.md", b"# More")),
    ]
    assert [r.status_code for r in refused] == [403] * len(refused)
    assert "admin" in refused[0].json()["detail"]
    assert Document.objects.for_org(org).count() == 1 and KnowledgeBase.objects.for_org(org).count() == 1

    assert admin.post(kb_url(org), {"name": "new"}, format="json").status_code == 201
    assert upload(admin, org, knowledge_base, ("more.md", b"# More")).status_code == 201


def _failed_document(knowledge_base, actor) -> Document:
    """A document that fails indexing: text named as a PDF."""
    data = b"plain words, not a PDF"
    from agents.knowledge.services import DocumentQueued, document_upload

    uploaded = document_upload(
        knowledge_base=knowledge_base,
        name="scan.pdf",
        content=SimpleUploadedFile("scan.pdf", data),
        uploaded_by=actor,
    )
    assert isinstance(uploaded, DocumentQueued)
    document_ingest(uploaded.document.pk)
    uploaded.document.refresh_from_db()
    assert uploaded.document.status == DocumentStatus.FAILED
    return uploaded.document


def test_the_openapi_schema_documents_every_knowledge_route(client_for, member):
    schema = json.loads(client_for(member).get("/api/schema/", {"format": "json"}).content)
    base = "/api/v1/orgs/{org_slug}/knowledge-bases/"
    documents = base + "{knowledge_base_id}/documents/"
    routes = {
        path: set(item) - {"parameters"} for path, item in schema["paths"].items() if path.startswith(base)
    }

    assert routes == {
        base: {"get", "post"},
        base + "{id}/": {"get", "patch", "delete"},
        documents: {"get", "post"},
        documents + "from-url/": {"post"},
        documents + "{id}/": {"get", "delete"},
        documents + "{id}/reindex/": {"post"},
        documents + "{id}/download/": {"get"},
    }
    upload = schema["paths"][documents]["post"]
    assert set(upload["requestBody"]["content"]) == {"multipart/form-data"}
    assert {"200", "201", "400"} <= set(upload["responses"])
    download = schema["paths"][documents + "{id}/download/"]["get"]["responses"]["200"]["content"]
    assert download == {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}
    assert "members" in schema["components"]["schemas"]["KnowledgeBase"]["properties"]
