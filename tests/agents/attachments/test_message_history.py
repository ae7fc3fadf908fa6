"""The conversation's history (the messages API the chat page loads) lists each message's attachments: what
they are and where they download, in one query for the whole page, never another message's."""

from __future__ import annotations

import pytest
from django.core.files.base import ContentFile
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.attachments.models import Attachment
from agents.attachments.services import AttachmentStored, attachment_upload, attachments_bind
from tests.agents.attachments import files
from tests.agents.factories import ConversationFactory, MessageFactory

pytestmark = pytest.mark.django_db


def stored(org, user, name: str, data: bytes) -> Attachment:
    done = attachment_upload(organization=org, user=user, name=name, content=ContentFile(data))
    assert isinstance(done, AttachmentStored), done
    return done.attachment


def messages_url(org, conversation) -> str:
    return f"/api/v1/orgs/{org.slug}/conversations/{conversation.pk}/messages/"


def ask_with_files(org, user, conversation, content: str, *named: tuple[str, bytes]):
    message = MessageFactory(conversation=conversation, content=content)
    attachments = [stored(org, user, name, data) for name, data in named]
    attachments_bind(
        user=user,
        conversation=conversation,
        message=message,
        attachment_ids=[attachment.pk for attachment in attachments],
    )
    return message, attachments


def test_each_message_lists_the_files_sent_with_it_and_where_they_download(client_for, org, member):
    conversation = ConversationFactory(organization=org, user=member)
    asked, (report, picture) = ask_with_files(
        org,
        member,
        conversation,
        "What does the report say?",
        ("report.pdf", files.PDF),
        ("shot.png", files.PNG),
    )
    MessageFactory(conversation=conversation, role="assistant", content="It says hello.")
    stored(org, member, "still-pending.txt", b"Not sent yet.")

    results = client_for(member).get(messages_url(org, conversation)).json()["results"]

    assert [message["content"] for message in results] == ["What does the report say?", "It says hello."]
    assert results[0]["attachments"] == [
        {
            "id": str(report.pk),
            "name": "report.pdf",
            "kind": "document",
            "format": "pdf",
            "content_type": "application/pdf",
            "size": len(files.PDF),
            "download_url": f"/api/v1/orgs/acme/attachments/{report.pk}/download/",
        },
        {
            "id": str(picture.pk),
            "name": "shot.png",
            "kind": "image",
            "format": "png",
            "content_type": "image/png",
            "size": len(files.PNG),
            "download_url": f"/api/v1/orgs/acme/attachments/{picture.pk}/download/",
        },
    ]
    assert results[1]["attachments"] == []


def test_the_history_reads_the_attachments_of_a_page_in_one_query(
    client_for, org, member, django_assert_num_queries
):
    conversation = ConversationFactory(organization=org, user=member)
    ask_with_files(org, member, conversation, "First", ("a.txt", b"Alpha."))
    client = client_for(member)
    client.get(messages_url(org, conversation))  # the key's first use writes its own rows
    with CaptureQueriesContext(connection) as one_message:
        client.get(messages_url(org, conversation))

    for number in range(4):
        ask_with_files(
            org, member, conversation, f"Question {number}", ("b.txt", b"Beta."), ("c.txt", b"Gamma.")
        )
    with django_assert_num_queries(len(one_message.captured_queries)):
        results = client.get(messages_url(org, conversation)).json()["results"]

    assert [len(message["attachments"]) for message in results] == [1, 2, 2, 2, 2]


def test_a_messages_files_are_listed_in_the_order_the_sender_gave_them_not_their_upload_order(
    client_for, org, member
):
    conversation = ConversationFactory(organization=org, user=member)
    screenshot = stored(org, member, "shot.png", files.PNG)  # finished uploading first
    report = stored(org, member, "report.pdf", files.PDF)
    message = MessageFactory(conversation=conversation, content="Both, please.")
    attachments_bind(
        user=member, conversation=conversation, message=message, attachment_ids=[report.pk, screenshot.pk]
    )

    results = client_for(member).get(messages_url(org, conversation)).json()["results"]

    assert [a["name"] for a in results[0]["attachments"]] == ["report.pdf", "shot.png"]
