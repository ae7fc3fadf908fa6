"""What runs read of attachments: a document is read once, at upload, only as far as the model is shown
(a long spreadsheet is not read to its end), and runs use that reading, never the file again; an image's
bytes are read off the process's shared database thread, so the process's other work does not wait."""

from __future__ import annotations

import asyncio
import io
import threading
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage
from openpyxl import Workbook

from agents.attachments.models import Attachment, TextShown
from agents.attachments.reading import INLINE_CHARACTERS, conversation_reader, message_parts
from agents.attachments.services import AttachmentStored, attachment_upload, attachments_bind
from tests.agents.attachments import files
from tests.agents.factories import ConversationFactory, MessageFactory

PRICES = b"item,price\nbolt,2\nnut,1\n"


def stored(org, user, name: str, data: bytes) -> Attachment:
    done = attachment_upload(organization=org, user=user, name=name, content=ContentFile(data))
    assert isinstance(done, AttachmentStored), done
    return done.attachment


def spreadsheet(rows: int) -> bytes:
    workbook = Workbook(write_only=True)
    for title in ("Orders", "Returns"):
        sheet = workbook.create_sheet(title)
        sheet.append(["order", "item", "supplier"])
        for number in range(rows):
            sheet.append([f"PO-{number:06d}", f"part {number}", "Acme Industrial Supply"])
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


@pytest.mark.django_db
def test_a_document_is_read_at_upload_and_runs_read_that_not_the_file(org, member, media_root):
    prices = stored(org, member, "prices.csv", PRICES)
    (media_root / prices.file.name).write_bytes(b"item,price\nsomething else,9\n")

    (part,) = message_parts([Attachment.objects.for_org(org).get(pk=prices.pk)]).parts

    assert part["text"].startswith("[Attached file: prices.csv (text/csv)]\n")
    assert "| bolt | 2 |" in part["text"] and "something else" not in part["text"]


@pytest.mark.django_db
def test_a_long_spreadsheet_is_read_only_as_far_as_the_model_is_shown(org, member):
    # 2 sheets x 4,000 rows make about 400,000 characters: the reading stops in the first sheet
    sheet = stored(org, member, "orders.xlsx", spreadsheet(4000))

    assert sheet.text_shown == TextShown.CUT
    assert "## Orders" in sheet.text and "## Returns" not in sheet.text
    assert INLINE_CHARACTERS // 2 < len(sheet.text) < INLINE_CHARACTERS + 300
    assert sheet.text.endswith(
        "characters are shown, the rest is not. Say so when the answer may depend on the rest.]"
    )
    (read,) = message_parts([sheet]).read
    assert read.shown == "cut"


@pytest.mark.django_db
def test_a_document_without_text_is_read_as_a_note_saying_so(org, member):
    blank = stored(org, member, "scan.pdf", files.pdf())

    assert blank.text_shown == TextShown.UNREADABLE
    (part,) = message_parts([blank]).parts
    assert (
        part["text"]
        == "[Attached file: scan.pdf (application/pdf)]\n[The file has no text that can be read (no_text).]"
    )


@pytest.mark.django_db
def test_an_upload_from_before_reading_at_upload_is_read_when_a_run_needs_it(org, member):
    prices = stored(org, member, "prices.csv", PRICES)
    Attachment.objects.for_org(org).filter(pk=prices.pk).update(text="", text_shown="")

    parts = message_parts([Attachment.objects.for_org(org).get(pk=prices.pk)])

    assert "| nut | 1 |" in parts.parts[0]["text"] and parts.read[0].shown == "full"


@pytest.mark.django_db
def test_listings_of_attachments_do_not_load_the_text_runs_read(client_for, org, member):
    stored(org, member, "prices.csv", PRICES)

    listed = client_for(member).get(f"/api/v1/orgs/{org.slug}/attachments/").json()

    assert "bolt" not in str(listed)


@pytest.mark.django_db(transaction=True)
async def test_reading_an_image_leaves_the_shared_database_thread_free(org, member, monkeypatch):
    def sent_picture() -> tuple[Attachment, Any]:
        conversation = ConversationFactory(organization=org, user=member)
        picture = stored(org, member, "screen.png", files.PNG)
        attachments_bind(
            user=member,
            conversation=conversation,
            message=MessageFactory(conversation=conversation, content="What is this?"),
            attachment_ids=[picture.pk],
        )
        return picture, conversation

    picture, conversation = await database_sync_to_async(sent_picture)()
    opened, release = threading.Event(), threading.Event()
    open_file = FileSystemStorage._open

    def slow_open(storage, name, mode="rb"):
        opened.set()
        release.wait(10)  # a slow disk, or an object storage far away
        return open_file(storage, name, mode)

    monkeypatch.setattr(FileSystemStorage, "_open", slow_open)
    reader = conversation_reader(organization_id=org.pk, conversation_id=conversation.pk)
    reading = asyncio.ensure_future(reader(str(picture.pk)))
    assert await asyncio.to_thread(opened.wait, 5)

    # another conversation's database work, while the picture's bytes are on their way
    assert (
        await asyncio.wait_for(database_sync_to_async(lambda: Attachment.objects.for_org(org).count())(), 3)
        == 1
    )

    release.set()
    data = await reading
    assert data is not None and data.data == files.PNG and data.media_type == "image/png"
