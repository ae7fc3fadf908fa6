"""The chat's download link of an attachment (``/o/<slug>/attachments/<id>/download/``): the file for its
uploader while pending and its conversation's owner once sent, members both, audited; the same 404 for
anyone else, another organisation's member included; a signed-out visitor is sent to sign in."""

from __future__ import annotations

import pytest
from django.core.files.base import ContentFile
from django.urls import reverse

from agents.attachments.services import AttachmentStored, attachment_upload, attachments_bind
from platform_core.models import ApiKey, ApiKeyAddress, AuditLog, Membership, Role
from tests.agents.attachments import files
from tests.agents.factories import ConversationFactory, MessageFactory
from tests.factories import PASSWORD, member_of

pytestmark = pytest.mark.django_db


def page_url(org, attachment) -> str:
    return reverse("attachment-file", kwargs={"org_slug": org.slug, "attachment_id": attachment.pk})


def stored(org, user, name="screenshot.png", data=files.PNG):
    done = attachment_upload(organization=org, user=user, name=name, content=ContentFile(data))
    assert isinstance(done, AttachmentStored)
    return done.attachment


def body(response) -> bytes:
    return b"".join(response.streaming_content)


def signed_in(client, user):
    client.logout()
    assert client.login(username=user.username, password=PASSWORD)
    return client


@pytest.mark.cross_org("attachment-file")
def test_the_download_link_serves_the_conversations_owner_and_is_404_for_everyone_else(
    client, org, member, org_owner, other_org
):
    attachment = stored(org, member)
    url = page_url(org, attachment)
    colleague = member_of(org, Role.MEMBER, username="colleague")
    foreigner = member_of(other_org, Role.OWNER, username="gus")

    assert signed_in(client, member).get(url).status_code == 200  # pending: its uploader
    conversation = ConversationFactory(organization=org, user=member)
    message = MessageFactory(conversation=conversation)
    attachments_bind(user=member, conversation=conversation, message=message, attachment_ids=[attachment.pk])

    response = signed_in(client, member).get(url)
    assert response.status_code == 200 and body(response) == files.PNG
    assert response["Content-Type"] == "image/png"
    assert response["Content-Disposition"] == 'attachment; filename="screenshot.png"'
    assert response["X-Content-Type-Options"] == "nosniff"
    assert AuditLog.objects.for_org(org).filter(action="attachment.download", actor=member).count() == 2

    for user in (colleague, org_owner, foreigner):
        refused = signed_in(client, user).get(url)
        assert refused.status_code == 404, user.username
        assert files.PNG[:8] not in refused.content
    # Through the other organisation's slug, a member of it finds nothing either.
    assert signed_in(client, foreigner).get(url.replace(org.slug, other_org.slug)).status_code == 404
    assert (
        not AuditLog.objects.for_org(org).filter(action="attachment.download").exclude(actor=member).exists()
    )


def test_the_download_link_is_404_once_its_owner_left_the_organisation(client, org, member):
    attachment = stored(org, member)
    signed_in(client, member)
    Membership.objects.filter(user=member, organization=org).delete()
    assert client.get(page_url(org, attachment)).status_code == 404


def test_the_download_link_sends_a_signed_out_visitor_to_sign_in(client, org, member):
    response = client.get(page_url(org, stored(org, member)))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_the_download_link_takes_an_api_key_with_the_read_scope_only(client, org, member):
    attachment = stored(org, member)

    def key(scopes):
        raw = ApiKey.new_raw()
        made = ApiKey.objects.create(
            user=member,
            name=f"key-{'-'.join(scopes)}",
            key_prefix=raw[:12],
            key_hash=ApiKey.hash_raw(raw),
            scopes=scopes,
            last_used_ip="127.0.0.1",
        )
        ApiKeyAddress.objects.create(key=made, ip_address="127.0.0.1")
        return f"Bearer {raw}"

    allowed = client.get(page_url(org, attachment), HTTP_AUTHORIZATION=key(["read"]))
    assert allowed.status_code == 200 and body(allowed) == files.PNG
    assert client.get(page_url(org, attachment), HTTP_AUTHORIZATION=key(["chat"])).status_code == 403


def test_a_missing_file_or_a_random_id_is_the_same_404(client, org, member, media_root):
    attachment = stored(org, member)
    (media_root / attachment.file.name).unlink()
    signed_in(client, member)
    assert client.get(page_url(org, attachment)).status_code == 404
    assert (
        client.get(
            reverse(
                "attachment-file",
                kwargs={"org_slug": org.slug, "attachment_id": "00000000-0000-0000-0000-000000000001"},
            )
        ).status_code
        == 404
    )
