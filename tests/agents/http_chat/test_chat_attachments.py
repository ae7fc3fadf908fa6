"""Files sent with a question over the HTTP chat and the websocket: the model reads a document's text
and, when it sees, an image; what the run read is in its events; refused attachments leave nothing
recorded."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.core.files.base import ContentFile

from agents.attachments.models import Attachment
from agents.attachments.reading import INLINE_CHARACTERS
from agents.attachments.services import AttachmentStored, attachment_upload
from agents.models import Message, ModelConfig, Run, RunCheckpoint
from agents.runs.events.store import events_after_sync
from platform_core.identity.api_keys.keys import api_token_issue
from tests.agents.attachments.files import image
from tests.agents.http_chat.conftest import wait_for
from tests.fakes.openai_server import hang, text
from tests.production.ws_client import ws_open

pytestmark = pytest.mark.django_db(transaction=True)

PRICES = "item,price\nbolt,2\nnut,1\n"


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path) -> Path:
    settings.MEDIA_ROOT = str(tmp_path / "media")
    return Path(settings.MEDIA_ROOT)


def _upload(world: Any, name: str, data: bytes, user: Any = None) -> Attachment:
    stored = attachment_upload(
        organization=world.org, user=user or world.requester, name=name, content=ContentFile(data, name=name)
    )
    assert isinstance(stored, AttachmentStored), stored
    return stored.attachment


def _client(live_server_url: Any, user: Any) -> Any:
    return live_server_url.client(api_token_issue(user=user, name="attachments-test")[1])


def _messages_url(world: Any) -> str:
    return f"/api/v1/orgs/{world.org.slug}/conversations/{world.conversation.pk}/messages/"


def _done(world: Any) -> list[dict[str, Any]]:
    return wait_for(
        lambda: (
            (frames := events_after_sync(world.conversation.pk, 0))
            and frames[-1]["event"] == "done"
            and not Run.objects.unscoped().filter(status="running").exists()
            and frames
        )
    )


def _checkpoints_referring() -> str | None:
    """The stored checkpoints as JSON once one holds an attachment reference (else ``None``)."""
    kept = json.dumps(list(RunCheckpoint.objects.values_list("data", flat=True)))
    return kept if "attachment:" in kept else None


def _question_parts(request: dict[str, Any]) -> list[dict[str, Any]]:
    return request["messages"][-1]["content"]


def test_the_model_reads_a_sent_spreadsheet_and_the_run_records_it(live_server_url, purchasing, scripted_llm):
    scripted_llm.script(text("A bolt costs 2."), text("A bolt costs 2."))
    prices = _upload(purchasing, "prices.csv", PRICES.encode())
    client = _client(live_server_url, purchasing.requester)

    posted = client.post(
        _messages_url(purchasing), json={"content": "What does a bolt cost?", "attachments": [str(prices.pk)]}
    )

    assert posted.status_code == 202, posted.text
    frames = _done(purchasing)
    question = _question_parts(scripted_llm.requests[0])
    assert question[0] == {"type": "text", "text": "What does a bolt cost?"}
    assert question[1]["text"].startswith("[Attached file: prices.csv (text/csv)]")
    assert "| bolt | 2 |" in question[1]["text"]  # the sheet as a table under its header row
    assert "bolt" in json.dumps(scripted_llm.requests[1]["messages"])  # the synthesis reads it too
    (read,) = [f["data"] for f in frames if f["event"] == "step" and f["data"].get("type") == "attachments"]
    assert read["attachments"] == [
        {"id": str(prices.pk), "name": "prices.csv", "kind": "document", "shown": "full"}
    ]
    prices.refresh_from_db()
    assert (
        prices.conversation_id == purchasing.conversation.pk
        and prices.message_id == posted.json()["message_id"]
    )
    listed = client.get(_messages_url(purchasing)).json()
    sent = next(m for m in listed["results"] if m["id"] == posted.json()["message_id"])
    assert [a["name"] for a in sent["attachments"]] == ["prices.csv"]


def test_a_later_question_still_carries_the_file_sent_earlier(live_server_url, purchasing, scripted_llm):
    scripted_llm.script(text("2."), text("2."), text("1."), text("1."))
    prices = _upload(purchasing, "prices.csv", PRICES.encode())
    client = _client(live_server_url, purchasing.requester)
    client.post(_messages_url(purchasing), json={"content": "Bolt?", "attachments": [str(prices.pk)]})
    _done(purchasing)

    assert client.post(_messages_url(purchasing), json={"content": "And a nut?"}).status_code == 202
    wait_for(
        lambda: (
            len(scripted_llm.requests) >= 4 and not Run.objects.unscoped().filter(status="running").exists()
        )
    )

    history = scripted_llm.requests[2]["messages"]
    earlier = next(m for m in history if isinstance(m["content"], list))
    assert "| nut | 1 |" in earlier["content"][1]["text"]
    assert history[-1]["content"] == "And a nut?"


def test_a_long_document_is_cut_and_the_model_and_the_events_say_so(
    live_server_url, purchasing, scripted_llm
):
    scripted_llm.script(text("ok"), text("ok"))
    rows = "".join(f"line {n} of the contract\n" for n in range(INLINE_CHARACTERS // 10))
    contract = _upload(purchasing, "contract.txt", rows.encode())
    client = _client(live_server_url, purchasing.requester)

    client.post(_messages_url(purchasing), json={"content": "Summarise", "attachments": [str(contract.pk)]})

    frames = _done(purchasing)
    shown = _question_parts(scripted_llm.requests[0])[1]["text"]
    assert len(shown) < INLINE_CHARACTERS + 500 and "[The file is longer" in shown
    (read,) = [f["data"] for f in frames if f["event"] == "step" and f["data"].get("type") == "attachments"]
    assert read["attachments"][0]["shown"] == "cut"


def test_an_agent_whose_model_sees_gets_the_image_and_checkpoints_keep_only_its_reference(
    live_server_url, purchasing, scripted_llm
):
    ModelConfig.objects.for_org(purchasing.org).update(vision=True)
    # The synthesis waits: the checkpoints of the loop are read meanwhile (a finished run drops them).
    scripted_llm.script(text("A red picture."), hang(8, then=text("A red picture.")))
    picture = _upload(purchasing, "screen.png", image("PNG"))
    client = _client(live_server_url, purchasing.requester)

    client.post(
        _messages_url(purchasing), json={"content": "What is this?", "attachments": [str(picture.pk)]}
    )

    # the loop's checkpoints, written with its events (in a batch): waited for while the synthesis hangs
    kept = wait_for(_checkpoints_referring)
    assert f"attachment:{picture.pk}" in kept and "base64" not in kept
    _done(purchasing)
    sent = _question_parts(scripted_llm.requests[0])[1]
    assert sent["type"] == "image_url" and sent["image_url"]["url"].startswith("data:image/png;base64,iVBOR")


def test_an_image_for_an_agent_whose_model_cannot_see_is_refused_naming_it_and_nothing_is_recorded(
    live_server_url, purchasing, scripted_llm
):
    picture = _upload(purchasing, "screen.png", image("PNG"))
    client = _client(live_server_url, purchasing.requester)

    refused = client.post(
        _messages_url(purchasing), json={"content": "What is this?", "attachments": [str(picture.pk)]}
    )

    assert refused.status_code == 400
    assert refused.json()["attachments"][0].startswith("This agent's model cannot read images (screen.png)")
    assert (
        not Run.objects.unscoped().exists()
        and not Message.objects.filter(conversation=purchasing.conversation).exists()
    )
    picture.refresh_from_db()
    assert picture.pending and scripted_llm.requests == []


def test_someone_elses_upload_cannot_be_sent_and_nothing_is_recorded(
    live_server_url, purchasing, scripted_llm
):
    theirs = _upload(purchasing, "prices.csv", PRICES.encode(), user=purchasing.approver)
    client = _client(live_server_url, purchasing.requester)

    refused = client.post(
        _messages_url(purchasing), json={"content": "Read it", "attachments": [str(theirs.pk)]}
    )

    assert refused.status_code == 400 and "attachments" in refused.json()
    assert not Run.objects.unscoped().exists()
    theirs.refresh_from_db()
    assert theirs.pending


def test_files_sent_while_the_agent_answers_are_refused_and_stay_pending(
    live_server_url, purchasing, scripted_llm
):
    scripted_llm.script(hang(30))
    client = _client(live_server_url, purchasing.requester)
    assert client.post(_messages_url(purchasing), json={"content": "Think long"}).status_code == 202
    prices = _upload(purchasing, "prices.csv", PRICES.encode())

    refused = client.post(
        _messages_url(purchasing), json={"content": "Also this", "attachments": [str(prices.pk)]}
    )

    assert refused.status_code == 400
    assert refused.json()["attachments"][0].startswith("Files are sent with a new question")
    prices.refresh_from_db()
    assert prices.pending
    scripted_llm.reset()


async def test_the_websocket_sends_a_question_with_its_file(live_server_url, purchasing, scripted_llm):
    scripted_llm.script(text("2."), text("A bolt costs 2."))
    prices = await database_sync_to_async(_upload)(purchasing, "prices.csv", PRICES.encode())
    token = await asyncio.to_thread(lambda: api_token_issue(user=purchasing.requester, name="ws")[1])
    ws = await ws_open(live_server_url.url, str(purchasing.conversation.pk), token)
    try:
        await ws.send(
            json.dumps({"type": "message", "content": "Bolt price?", "attachments": [str(prices.pk)]})
        )
        while True:
            frame = json.loads(await asyncio.wait_for(ws.recv(), 15))
            if frame["event"] == "done":
                break
    finally:
        await ws.close()
    assert "| bolt | 2 |" in _question_parts(scripted_llm.requests[0])[1]["text"]


async def test_the_websocket_refuses_attachments_that_are_not_a_list_of_ids(live_server_url, purchasing):
    token = await asyncio.to_thread(lambda: api_token_issue(user=purchasing.requester, name="ws")[1])
    ws = await ws_open(live_server_url.url, str(purchasing.conversation.pk), token)
    try:
        await ws.send(json.dumps({"type": "message", "content": "Hi", "attachments": "prices.csv"}))
        frame = json.loads(await asyncio.wait_for(ws.recv(), 15))
    finally:
        await ws.close()
    assert frame["event"] == "error" and frame["data"]["code"] == "bad_attachments"


def test_a_files_content_never_reaches_the_logs(live_server_url, purchasing, scripted_llm, caplog):
    marker = "ZEBRA-7731-CONFIDENTIAL"
    scripted_llm.script(text("Read."), text("Read."))
    contract = _upload(purchasing, "contract.txt", f"Clause 4: {marker}\n".encode())
    client = _client(live_server_url, purchasing.requester)

    with caplog.at_level("DEBUG"):
        client.post(_messages_url(purchasing), json={"content": "Read it", "attachments": [str(contract.pk)]})
        _done(purchasing)

    assert marker in json.dumps(scripted_llm.requests[0])  # the model read it
    assert caplog.records and not [r for r in caplog.records if marker in r.getMessage()]
