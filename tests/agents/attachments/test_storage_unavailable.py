"""A download whose file the storage will not give: refused credentials of a real S3 server (SeaweedFS) are
a 503 that says to try again, on the web and the API, for attachments and knowledge documents alike; an
object gone from the bucket is the 404 of a missing file. Never a 500."""

from __future__ import annotations

import pytest
from django.core.files.base import ContentFile
from django.urls import reverse

from agents.attachments.services import AttachmentStored, attachment_upload
from platform_core.file_storage import S3Settings, default_file_storage
from tests.agents.attachments import files
from tests.agents.knowledge.world import POLICY_EN, indexed, knowledge_base_with
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db

UNAVAILABLE = "The file storage did not answer. Try again in a moment"


def _refusing_credentials(settings, s3_server) -> None:
    """The same bucket, with a secret key the server refuses (as after a rotated key)."""
    settings.STORAGES = {
        **settings.STORAGES,
        "default": default_file_storage(
            kind="s3",
            s3=S3Settings(
                bucket=s3_server.bucket,
                endpoint_url=s3_server.endpoint_url,
                region=s3_server.region,
                access_key_id=s3_server.access_key_id,
                secret_access_key="not-the-secret",
                addressing_style="path",
            ),
        ),
    }


def _attachment(org, member):
    stored = attachment_upload(
        organization=org, user=member, name="contract.pdf", content=ContentFile(files.PDF)
    )
    assert isinstance(stored, AttachmentStored)
    return stored.attachment


def test_an_attachment_the_storage_will_not_give_is_a_503_on_the_web_and_the_api(
    client, org, member, s3_storage, s3_server, settings
):
    attachment = _attachment(org, member)
    _refusing_credentials(settings, s3_server)
    assert client.login(username=member.username, password=PASSWORD)

    web = client.get(
        reverse("attachment-file", kwargs={"org_slug": org.slug, "attachment_id": attachment.pk})
    )
    api = client.get(reverse("attachment-download", kwargs={"org_slug": org.slug, "pk": attachment.pk}))

    assert web.status_code == 503 and web.content.decode().startswith(UNAVAILABLE)
    assert web["Retry-After"] == "30"
    assert api.status_code == 503 and api.json()["detail"].startswith(UNAVAILABLE)


def test_a_knowledge_document_the_storage_will_not_give_is_a_503(
    client, org, org_admin, s3_storage, s3_server, settings
):
    document = indexed(knowledge_base_with(org, org_admin), "policy.md", POLICY_EN)
    _refusing_credentials(settings, s3_server)
    assert client.login(username=org_admin.username, password=PASSWORD)

    web = client.get(
        reverse("knowledge-document-file", kwargs={"org_slug": org.slug, "document_id": document.pk})
    )
    api = client.get(
        reverse(
            "knowledge-document-download",
            kwargs={"org_slug": org.slug, "knowledge_base_id": document.knowledge_base_id, "pk": document.pk},
        )
    )

    assert web.status_code == 503 and api.status_code == 503
    assert api.json()["detail"].startswith(UNAVAILABLE)


def test_an_object_gone_from_the_bucket_is_the_404_of_a_missing_file(client, org, member, s3_storage):
    attachment = _attachment(org, member)
    attachment.file.storage.delete(attachment.file.name)  # behind the platform's back
    assert client.login(username=member.username, password=PASSWORD)

    response = client.get(
        reverse("attachment-file", kwargs={"org_slug": org.slug, "attachment_id": attachment.pk})
    )

    assert response.status_code == 404


def test_the_refusal_reads_in_chinese_for_a_chinese_reader(
    client, org, member, s3_storage, s3_server, settings
):
    attachment = _attachment(org, member)
    _refusing_credentials(settings, s3_server)
    assert client.login(username=member.username, password=PASSWORD)

    response = client.get(
        reverse("attachment-download", kwargs={"org_slug": org.slug, "pk": attachment.pk}),
        HTTP_ACCEPT_LANGUAGE="zh-hans",
    )

    assert response.status_code == 503 and "文件存储" in response.json()["detail"]
