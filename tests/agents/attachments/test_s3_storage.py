"""Attachments in S3-compatible object storage (``FILE_STORAGE=s3``), against a real S3 server (SeaweedFS's
gateway): each upload is a private object under ``attachments/<org>/<attachment>/``, a refused one leaves
no object, the download streams the object to the people who may see it, and every deletion (the user's,
the conversation's, the retention sweep's) removes the object once it commits."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.urls import reverse
from django.utils import timezone

from agents.attachments.models import Attachment
from agents.attachments.retention import SweepReport, attachments_sweep
from agents.attachments.services import (
    AttachmentStored,
    attachment_delete,
    attachment_upload,
    attachments_bind,
)
from agents.services import conversation_delete
from tests.agents.attachments import files
from tests.agents.factories import ConversationFactory, MessageFactory
from tests.factories import PASSWORD, member_of

pytestmark = pytest.mark.django_db


def upload(org, user, name, data):
    return attachment_upload(organization=org, user=user, name=name, content=ContentFile(data))


def test_an_upload_is_a_private_object_in_the_bucket_and_a_refusal_leaves_none(
    org, member, s3_storage, media_root
):
    done = upload(org, member, "screenshot.png", files.PNG)
    refused = upload(org, member, "secret.pdf", files.pdf(password="pw"))

    assert isinstance(done, AttachmentStored) and refused.code == "encrypted"  # type: ignore[union-attr]
    attachment = done.attachment
    assert attachment.file.name == f"attachments/{org.pk}/{attachment.pk}/screenshot.png"
    assert s3_storage.keys() == [s3_storage.key(attachment.file.name)]
    assert s3_storage.body(attachment.file.name) == files.PNG
    assert not any(path.is_file() for path in Path(media_root).rglob("*"))


@pytest.mark.cross_org("attachment-file")
def test_the_download_streams_the_object_to_its_owner_only(client, org, member, other_org, s3_storage):
    attachment = upload(org, member, "contract.pdf", files.PDF).attachment  # type: ignore[union-attr]
    url = reverse("attachment-file", kwargs={"org_slug": org.slug, "attachment_id": attachment.pk})

    assert client.login(username=member.username, password=PASSWORD)
    response = client.get(url)
    assert response.status_code == 200 and response.streaming
    assert b"".join(response.streaming_content) == files.PDF
    assert response["Content-Type"] == "application/pdf"

    client.logout()
    outsider = member_of(other_org, username="gus")
    assert client.login(username=outsider.username, password=PASSWORD)
    assert client.get(url).status_code == 404


def test_every_deletion_removes_the_object_once_it_commits(
    org, member, s3_storage, django_capture_on_commit_callbacks
):
    pending = upload(org, member, "pending.txt", b"pending").attachment  # type: ignore[union-attr]
    sent = upload(org, member, "sent.txt", b"sent").attachment  # type: ignore[union-attr]
    never_sent = upload(org, member, "old.txt", b"old").attachment  # type: ignore[union-attr]
    conversation = ConversationFactory(organization=org, user=member)
    message = MessageFactory(conversation=conversation)
    attachments_bind(user=member, conversation=conversation, message=message, attachment_ids=[sent.pk])
    Attachment.objects.for_org(org).filter(pk=never_sent.pk).update(
        created_at=timezone.now() - timedelta(days=2)
    )
    assert len(s3_storage.keys()) == 3

    with django_capture_on_commit_callbacks(execute=True):
        attachment_delete(attachment=pending, actor=member)
    assert sorted(s3_storage.keys()) == sorted(
        [s3_storage.key(sent.file.name), s3_storage.key(never_sent.file.name)]
    )

    with django_capture_on_commit_callbacks(execute=True):
        conversation_delete(conversation=conversation)
    assert s3_storage.keys() == [s3_storage.key(never_sent.file.name)]

    with django_capture_on_commit_callbacks(execute=True):
        assert attachments_sweep() == SweepReport(never_sent=1)
    assert s3_storage.keys() == []
