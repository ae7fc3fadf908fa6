"""Documents in S3-compatible object storage (``FILE_STORAGE=s3``), against a real S3 server (SeaweedFS's
gateway): each upload is a private object under ``knowledge/<org>/<knowledge base>/<document>/``, ingestion
reads it from the bucket, a new version and a deletion remove the objects they leave behind, and the
download streams the object to readers only."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.urls import reverse
from storages.backends.s3 import S3Storage

from agents.knowledge.failures import IngestFailure
from agents.knowledge.ingestion import document_ingest
from agents.knowledge.models import Chunk, Document, DocumentStatus
from agents.knowledge.services import (
    DocumentQueued,
    document_delete,
    document_upload,
    knowledge_base_delete,
)
from tests.agents.knowledge.world import POLICY_EN, POLICY_ZH, indexed, knowledge_base_with
from tests.eager_tasks import tasks_run_eagerly
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db


def passages(document: Document) -> str:
    return "\n".join(
        Chunk.objects.for_org(document.organization_id)
        .filter(document=document)
        .values_list("text", flat=True)
    )


def test_an_upload_is_an_object_in_the_bucket_and_is_indexed_from_it(org, org_admin, s3_storage, settings):
    kb = knowledge_base_with(org, org_admin)

    document = indexed(kb, "policy.md", POLICY_EN)

    assert isinstance(Document._meta.get_field("file").storage._wrapped, S3Storage)  # type: ignore[attr-defined]
    assert document.file.name == f"knowledge/{org.id}/{kb.id}/{document.id}/policy.md"
    assert s3_storage.keys() == [s3_storage.key(document.file.name)]
    assert s3_storage.body(document.file.name) == POLICY_EN.encode()
    assert document.status == DocumentStatus.READY and document.chunk_count > 0
    assert "finance director" in passages(document)
    assert not any(path.is_file() for path in Path(settings.MEDIA_ROOT).rglob("*"))


def test_a_new_version_replaces_the_object_once_it_commits(
    org, org_admin, s3_storage, django_capture_on_commit_callbacks
):
    kb = knowledge_base_with(org, org_admin)
    old = indexed(kb, "policy.md", POLICY_EN)
    new_text = POLICY_EN.replace("50,000", "80,000")

    with tasks_run_eagerly(propagate=True), django_capture_on_commit_callbacks(execute=True):
        uploaded = document_upload(
            knowledge_base=kb, name="policy.md", content=ContentFile(new_text.encode()), uploaded_by=org_admin
        )

    assert isinstance(uploaded, DocumentQueued) and uploaded.replaced
    document = Document.objects.for_org(org).get(pk=old.pk)
    # Its own key: the old version's object, deleted after the commit, was never overwritten by the new one.
    assert document.file.name != old.file.name
    assert s3_storage.keys() == [s3_storage.key(document.file.name)]
    assert s3_storage.body(document.file.name) == new_text.encode()
    # The worker's task (run here) read the new version from the bucket.
    assert document.status == DocumentStatus.READY and document.version == 2
    assert "80,000" in passages(document) and "50,000" not in passages(document)


def test_deleting_a_document_or_its_knowledge_base_deletes_the_objects(
    org, org_admin, s3_storage, django_capture_on_commit_callbacks
):
    kb = knowledge_base_with(org, org_admin)
    english = indexed(kb, "policy.md", POLICY_EN)
    chinese = indexed(kb, "政策.md", POLICY_ZH)
    other = indexed(knowledge_base_with(org, org_admin, name="other"), "policy.md", POLICY_EN)
    assert len(s3_storage.keys()) == 3

    with django_capture_on_commit_callbacks(execute=True):
        document_delete(document=english, actor=org_admin)
    assert s3_storage.keys() == sorted([s3_storage.key(chinese.file.name), s3_storage.key(other.file.name)])

    with django_capture_on_commit_callbacks(execute=True):
        knowledge_base_delete(knowledge_base=kb, actor=org_admin)
    assert s3_storage.keys() == [s3_storage.key(other.file.name)]


@pytest.mark.cross_org("knowledge-document-file")
def test_the_download_streams_the_object_to_a_reader_and_is_404_for_another_organisation(
    client, org, org_admin, member, other_admin, s3_storage
):
    document = indexed(knowledge_base_with(org, org_admin), "采购政策.md", POLICY_ZH)
    url = reverse("knowledge-document-file", kwargs={"org_slug": org.slug, "document_id": document.pk})

    assert client.login(username=member.username, password=PASSWORD)
    response = client.get(url)
    assert response.status_code == 200 and response.streaming
    assert b"".join(response.streaming_content) == POLICY_ZH.encode()
    assert response["Content-Length"] == str(len(POLICY_ZH.encode()))
    assert response["Content-Disposition"].startswith("attachment;")

    client.logout()
    assert client.login(username=other_admin.username, password=PASSWORD)
    foreign = client.get(url)
    assert foreign.status_code == 404 and POLICY_ZH.encode()[:30] not in foreign.content


def test_an_object_removed_from_the_bucket_is_a_404_download_and_a_failed_ingestion(
    client, org, org_admin, member, s3_storage
):
    document = indexed(knowledge_base_with(org, org_admin), "policy.md", POLICY_EN)
    s3_storage.server.client().delete_object(
        Bucket=s3_storage.server.bucket, Key=s3_storage.key(document.file.name)
    )
    url = reverse("knowledge-document-file", kwargs={"org_slug": org.slug, "document_id": document.pk})

    assert client.login(username=member.username, password=PASSWORD)
    assert client.get(url).status_code == 404

    Document.objects.for_org(org).filter(pk=document.pk).update(status=DocumentStatus.QUEUED)
    document_ingest(document.pk)
    document.refresh_from_db()
    assert document.status == DocumentStatus.FAILED and document.failure_code == IngestFailure.FILE_MISSING


def test_a_stored_object_is_not_readable_without_the_platform_credentials(org, org_admin, s3_storage):
    document = indexed(knowledge_base_with(org, org_admin), "policy.md", POLICY_EN)
    key = s3_storage.key(document.file.name)
    server = s3_storage.server

    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{server.endpoint_url}/{server.bucket}/{key}", timeout=10)  # noqa: S310
    assert refused.value.code == 403
    # Any URL the storage makes is signed (and expires): a plain public link is never made.
    signed = default_storage.url(document.file.name)
    assert "X-Amz-Signature=" in signed and "X-Amz-Expires=" in signed
    with urllib.request.urlopen(signed, timeout=10) as answer:  # noqa: S310
        assert answer.read() == POLICY_EN.encode()


def test_a_storage_that_refuses_the_deletion_leaves_the_objects_logged_and_the_deletion_done(
    org, org_admin, s3_storage, settings, caplog, django_capture_on_commit_callbacks
):
    kb = knowledge_base_with(org, org_admin)
    first, second = indexed(kb, "policy.md", POLICY_EN), indexed(kb, "政策.md", POLICY_ZH)
    default = settings.STORAGES["default"]
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {**default, "OPTIONS": {**default["OPTIONS"], "secret_key": "not-the-secret"}},
    }

    with django_capture_on_commit_callbacks(execute=True):
        knowledge_base_delete(knowledge_base=kb, actor=org_admin)

    assert not Document.objects.for_org(org).exists()
    assert s3_storage.keys() == sorted(s3_storage.key(d.file.name) for d in (first, second))
    left = [r.getMessage() for r in caplog.records if r.name == "agents.knowledge.services"]
    assert left == [
        f"could not delete the stored knowledge file {d.file.name}; it is left behind"
        for d in (first, second)
    ]
    assert "not-the-secret" not in caplog.text
