"""Files in the question of the OpenAI-compatible endpoint, sent by the official ``openai`` SDK (streaming
and not): an image as a data URL and a file part as the SDK sends them reach the agent's model in the shape
its endpoint expects; an image to a model without vision gets a clear 400 naming the ability; a refused
question leaves none of its files behind."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import openai
import pytest

from agents.attachments.models import Attachment
from agents.attachments.services import AttachmentStored, attachment_upload
from agents.models import ModelConfig, Run
from platform_core.identity.api_keys.keys import api_token_issue
from tests.agents.attachments.files import image
from tests.fakes.documents import pdf_with_pages
from tests.fakes.openai_server import text

pytestmark = pytest.mark.django_db(transaction=True)

MODEL = "acme/Purchasing assistant"
PRICES = b"item,price\nbolt,2\nnut,1\n"


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path) -> Path:
    settings.MEDIA_ROOT = str(tmp_path / "media")
    return Path(settings.MEDIA_ROOT)


def _sdk(live: Any, user: Any) -> openai.OpenAI:
    token = api_token_issue(user=user, name="openai-files")[1]
    return openai.OpenAI(base_url=f"{live.url}/v1", api_key=token, max_retries=0, timeout=30)


def _data_url(media_type: str, data: bytes) -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode()}"


def _question(request: dict[str, Any]) -> list[dict[str, Any]]:
    return request["messages"][-1]["content"]


def _text(words: str) -> dict[str, Any]:
    return {"type": "text", "text": words}


def _image(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


def _file(**file: str) -> dict[str, Any]:
    return {"type": "file", "file": file}


def _ask(client: openai.OpenAI, *parts: dict[str, Any], stream: bool = False) -> Any:
    """One user message of ``parts`` to the agent, as the SDK sends it."""
    return client.chat.completions.create(
        model=MODEL, stream=stream, messages=[{"role": "user", "content": list(parts)}]
    )


def _refusal(client: openai.OpenAI, *parts: dict[str, Any]) -> dict[str, Any]:
    """The 400's error body the endpoint answers a message of ``parts``."""
    with pytest.raises(openai.BadRequestError) as refused:
        _ask(client, *parts)
    body = refused.value.body
    assert isinstance(body, dict)
    return body


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_the_sdk_sends_an_image_and_a_file_and_the_model_receives_them(
    live_server_url, purchasing, scripted_llm, stream
):
    ModelConfig.objects.for_org(purchasing.org).update(vision=True)
    scripted_llm.script(text("A red square; a bolt costs 2."), text("A red square; a bolt costs 2."))
    picture = image("PNG")
    client = _sdk(live_server_url, purchasing.requester)

    created = _ask(
        client,
        _text("What is in the picture, and what does a bolt cost?"),
        _image(_data_url("image/png", picture)),
        _file(filename="prices.csv", file_data=_data_url("text/csv", PRICES)),
        stream=stream,
    )

    answer = (
        "".join(c.choices[0].delta.content or "" for c in created if c.choices)
        if stream
        else created.choices[0].message.content
    )
    assert answer == "A red square; a bolt costs 2."
    question = _question(scripted_llm.requests[0])
    assert question[0] == {"type": "text", "text": "What is in the picture, and what does a bolt cost?"}
    assert {"type": "image_url", "image_url": {"url": _data_url("image/png", picture)}} in question
    (document,) = [p for p in question if p["type"] == "text" and p["text"].startswith("[Attached file")]
    assert (
        document["text"].startswith("[Attached file: prices.csv (text/csv)]")
        and "| bolt | 2 |" in document["text"]
    )
    assert sorted(Attachment.objects.for_org(purchasing.org).values_list("name", flat=True)) == [
        "image-1.png",
        "prices.csv",
    ]


def test_a_pdf_sent_as_raw_base64_file_data_is_read(live_server_url, purchasing, scripted_llm):
    scripted_llm.script(text("Net 30."), text("Net 30."))
    client = _sdk(live_server_url, purchasing.requester)
    document = pdf_with_pages(["Payment terms: net 30 days."])

    _ask(
        client,
        _text("What are the payment terms?"),
        _file(filename="terms.pdf", file_data=base64.b64encode(document).decode()),
    )

    assert "net 30 days" in json.dumps(_question(scripted_llm.requests[0]))


def test_a_file_uploaded_before_is_sent_by_its_id(live_server_url, purchasing, scripted_llm):
    scripted_llm.script(text("2."), text("2."))
    stored = attachment_upload(
        organization=purchasing.org, user=purchasing.requester, name="prices.csv", content=_content(PRICES)
    )
    assert isinstance(stored, AttachmentStored)
    client = _sdk(live_server_url, purchasing.requester)

    _ask(client, _text("Bolt?"), _file(file_id=str(stored.attachment.pk)))

    assert "| bolt | 2 |" in json.dumps(_question(scripted_llm.requests[0]))


def test_an_image_to_a_model_without_vision_gets_a_400_naming_the_ability_and_nothing_is_kept(
    live_server_url, purchasing, scripted_llm
):
    client = _sdk(live_server_url, purchasing.requester)

    error = _refusal(client, _text("What is this?"), _image(_data_url("image/png", image("PNG"))))

    assert error["code"] == "model_cannot_read_images" and "vision" in error["message"]
    assert error["param"] == "messages[0].content[1]"
    assert not Attachment.objects.for_org(purchasing.org).exists() and not Run.objects.unscoped().exists()
    assert scripted_llm.requests == []


def test_an_image_by_web_address_is_refused_with_what_to_send_instead(
    live_server_url, purchasing, scripted_llm
):
    client = _sdk(live_server_url, purchasing.requester)

    error = _refusal(client, _image("https://example.com/cat.png"))

    assert error["code"] == "image_url_not_supported" and "data: URL" in error["message"]


def test_a_refused_file_leaves_none_of_the_questions_files_behind(live_server_url, purchasing, scripted_llm):
    client = _sdk(live_server_url, purchasing.requester)

    error = _refusal(
        client,
        _text("Read both"),
        _file(filename="prices.csv", file_data=_data_url("text/csv", PRICES)),
        _file(filename="photo.png", file_data=_data_url("image/png", b"not a picture")),
    )

    assert error["param"] == "messages[0].content[2]"
    assert not Attachment.objects.for_org(purchasing.org).exists()


def test_someone_elses_upload_cannot_be_sent_by_its_id(live_server_url, purchasing, scripted_llm):
    theirs = attachment_upload(
        organization=purchasing.org, user=purchasing.approver, name="prices.csv", content=_content(PRICES)
    )
    assert isinstance(theirs, AttachmentStored)
    client = _sdk(live_server_url, purchasing.requester)

    error = _refusal(client, _text("Read"), _file(file_id=str(theirs.attachment.pk)))

    assert error["code"] == "not_found"
    assert not Run.objects.unscoped().exists()
    theirs.attachment.refresh_from_db()
    assert theirs.attachment.pending


def test_files_in_earlier_messages_stand_as_a_note_and_are_not_read_again(
    live_server_url, purchasing, scripted_llm
):
    scripted_llm.script(text("ok"), text("ok"))
    client = _sdk(live_server_url, purchasing.requester)

    client.chat.completions.create(
        model=MODEL,
        messages=[
            {
                "role": "user",
                "content": [_text("Look"), _image(_data_url("image/png", image("PNG")))],
            },
            {"role": "assistant", "content": "I cannot see images."},
            {"role": "user", "content": "Fine, what is 2+2?"},
        ],
    )

    history = scripted_llm.requests[0]["messages"]
    assert any(m["content"] == "Look[A file was attached here; it is not sent again.]" for m in history)
    assert not Attachment.objects.for_org(purchasing.org).exists()


def _content(data: bytes) -> Any:
    from django.core.files.base import ContentFile

    return ContentFile(data, name="upload")
