"""Attached files in a run: the question carries them, the endpoint reads images it can see, and what is
kept (transcript, checkpoints) holds an image's reference, never its bytes."""

from __future__ import annotations

import base64
import json

from agents.engine.attachments import AttachedLLM, AttachmentData, image_reference
from agents.engine.react import ReActAgent
from tests.engine.doubles import registry_of
from tests.fakes.openai_server import text

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24
DOCUMENT = {"type": "text", "text": "[Attachment: prices.csv (text/csv)]\nitem,price\nbolt,2"}


class Reader:
    """Attachments by id, counting the reads."""

    def __init__(self, **attachments: AttachmentData) -> None:
        self.attachments = attachments
        self.reads: list[str] = []

    async def __call__(self, attachment_id: str) -> AttachmentData | None:
        self.reads.append(attachment_id)
        return self.attachments.get(attachment_id)


def _screenshot() -> Reader:
    return Reader(a1=AttachmentData(name="screen.png", media_type="image/png", data=PNG))


async def test_an_endpoint_that_sees_reads_the_attached_image_as_a_data_url(scripted_llm, make_llm):
    scripted_llm.script(text("It is an error dialog."))
    reader = _screenshot()
    llm = AttachedLLM(make_llm(abilities={"vision": True}), reader)

    await llm.chat(
        [
            {
                "role": "user",
                "content": [{"type": "text", "text": "What is this?"}, image_reference("a1", "screen.png")],
            }
        ]
    )

    (question,) = scripted_llm.requests[0]["messages"]
    assert question["content"] == [
        {"type": "text", "text": "What is this?"},
        {
            "type": "image_url",
            "image_url": {"url": "data:image/png;base64," + base64.b64encode(PNG).decode()},
        },
    ]
    assert "attachment:" not in json.dumps(scripted_llm.requests[0])


async def test_an_image_is_read_once_for_all_the_calls_of_a_run(scripted_llm, make_llm):
    scripted_llm.script(text("one"), text("two"))
    reader = _screenshot()
    llm = AttachedLLM(make_llm(abilities={"vision": True}), reader)
    ask = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "Describe"}, image_reference("a1", "screen.png")],
        }
    ]

    await llm.chat(ask)
    assert [delta async for delta in llm.stream_chat(ask)] == ["two"]

    assert reader.reads == ["a1"]
    assert scripted_llm.requests[1]["messages"][0]["content"][1]["image_url"]["url"].startswith(
        "data:image/png"
    )


async def test_an_endpoint_without_vision_is_told_an_image_is_attached_that_it_cannot_read(
    scripted_llm, make_llm
):
    scripted_llm.script(text("I cannot see it."))
    llm = AttachedLLM(make_llm(), _screenshot())

    await llm.chat(
        [
            {
                "role": "user",
                "content": [{"type": "text", "text": "What is this?"}, image_reference("a1", "screen.png")],
            }
        ]
    )

    sent = scripted_llm.requests[0]["messages"][0]["content"]
    assert sent[1] == {
        "type": "text",
        "text": "[An image is attached (screen.png), but this model cannot read images.]",
    }


async def test_an_image_deleted_meanwhile_becomes_a_note_not_a_failed_request(scripted_llm, make_llm):
    scripted_llm.script(text("ok"))
    llm = AttachedLLM(make_llm(abilities={"vision": True}), Reader())

    await llm.chat(
        [
            {
                "role": "user",
                "content": [{"type": "text", "text": "And this?"}, image_reference("gone", "old.png")],
            }
        ]
    )

    assert scripted_llm.requests[0]["messages"][0]["content"][1]["text"].startswith(
        "[The attached image old.png was deleted"
    )


async def test_messages_without_attachments_are_sent_as_they_are(scripted_llm, make_llm):
    scripted_llm.script(text("Paris."), text("Paris."))
    ask = [{"role": "user", "content": "Capital of France?"}]
    reader = Reader()

    await make_llm().chat(ask)
    await AttachedLLM(make_llm(), reader).chat(ask)

    assert scripted_llm.requests[0] == scripted_llm.requests[1]
    assert reader.reads == []


async def test_the_question_carries_its_attachments_into_the_loop_and_the_synthesis_but_checkpoints_keep_references(
    scripted_llm, make_llm
):
    scripted_llm.script(
        text("draft: the bolt costs 2"), text("The bolt costs 2; the screenshot shows an error.")
    )
    checkpoints: list[dict] = []

    async def checkpoint(change) -> None:
        checkpoints.append(change.as_dict())

    agent = ReActAgent(AttachedLLM(make_llm(abilities={"vision": True}), _screenshot()), registry_of())
    result = await agent.run(
        "What does the bolt cost, and what is on the screen?",
        attachments=[DOCUMENT, image_reference("a1", "screen.png")],
        checkpoint=checkpoint,
    )
    await agent.stream_answer(result)

    loop_question = scripted_llm.requests[0]["messages"][-1]["content"]
    assert loop_question[0] == {"type": "text", "text": "What does the bolt cost, and what is on the screen?"}
    assert loop_question[1] == DOCUMENT
    assert loop_question[2]["image_url"]["url"].startswith("data:image/png;base64,")
    synthesis = scripted_llm.requests[1]["messages"][1]["content"]
    assert synthesis[0]["text"].startswith("Question:\nWhat does the bolt cost")
    assert DOCUMENT in synthesis and synthesis[-1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert '"text": "[Attachment: prices.csv' not in synthesis[0]["text"]  # not in the trace a second time
    kept = json.dumps(checkpoints)
    assert "attachment:a1" in kept and "base64" not in kept
