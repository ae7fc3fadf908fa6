"""Files in the chat, in a real browser: a PDF dropped on the conversation and a screenshot pasted into the
box upload at once, each a chip with its type, size and progress; a file removed before sending is deleted
on the server; a refused file says why on its chip and is not sent; a picture for an agent whose model
cannot read images is stopped before sending; a sent message carries its files' ids and shows them, a
message the server refuses gives its text and files back; the history lists the files with download links.

The first test saves ``docs/screenshots/chat-attachments.png``, which the user guide shows.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from tests.e2e.browser_pages import expect
from tests.e2e.chat_pages import CONVERSATION_URL, open_new_chat
from tests.e2e.conftest import ROOT, wait_for
from tests.fakes.documents import pdf_with_pages
from tests.fakes.openai_server import text

pytestmark = pytest.mark.e2e

SCREENSHOT = ROOT / "docs" / "screenshots" / "chat-attachments.png"
MAX_SCREENSHOT_BYTES = 300 * 1024
READING_AGENT = "Reading assistant"
BLIND_AGENT = "Purchasing assistant"  # the world's agent: its model (the default endpoint) has no vision
POLICY_TEXT = "Trains under 600 CNY need no approval."
POLICY_PDF = pdf_with_pages([f"Travel policy\n{POLICY_TEXT}"])
SCREENSHOT_NAME = re.compile(r"^screenshot-\d{8}-\d{6}\.png$")


def png() -> bytes:
    from tests.agents.attachments.files import image

    return image("PNG", (120, 80))


def build_reading_agent() -> dict[str, str]:
    """An agent of ``acme`` whose endpoint (the scripted server, as the default's) reads images (run in a
    subprocess against the e2e server's database)."""
    from agents.models import Agent, ModelConfig

    default = ModelConfig.objects.unscoped().get(organization__slug="acme", is_default=True)
    seeing, _ = ModelConfig.objects.unscoped().get_or_create(
        organization=default.organization,
        name="scripted-vision",
        defaults={
            "base_url": default.base_url,
            "model": "scripted-vision-model",
            "api_key": "sk-scripted-test",
            "vision": True,
            "timeout": 30,
        },
    )
    agent, _ = Agent.objects.unscoped().get_or_create(
        organization=default.organization,
        name=READING_AGENT,
        defaults={
            "description": "Reads the files you attach.",
            "instructions": "Answer from the attached files; answer briefly.",
            "model_config": seeing,
            "completion_check": False,
        },
    )
    return {"agent": str(agent.pk)}


def build_conversation_with_files() -> dict[str, str]:
    """A conversation of ``mia`` whose question was sent with a PDF and a picture, and its answer (run in a
    subprocess against the e2e server's database, through the attachments' own services)."""
    from django.contrib.auth import get_user_model
    from django.core.files.base import ContentFile

    from agents.attachments.services import AttachmentStored, attachment_upload, attachments_bind
    from agents.models import Agent
    from platform_core.models import Organization
    from tests.factories import OrganizationFactory  # noqa: F401  (first: it loads the agents' factories)

    org = Organization.objects.get(slug="acme")
    user = get_user_model().objects.get(username="mia")
    from tests.agents.factories import ConversationFactory, MessageFactory, RunFactory

    agent = Agent.objects.unscoped().get(organization=org, name=BLIND_AGENT)
    conversation = ConversationFactory(organization=org, user=user, agent=agent, title="The travel policy")
    run = RunFactory(conversation=conversation, status="done")
    question = MessageFactory(conversation=conversation, run=run, content="What does the policy say?")
    attachments = []
    for name, data in (("travel-policy.pdf", POLICY_PDF), ("receipt.png", png())):
        done = attachment_upload(organization=org, user=user, name=name, content=ContentFile(data))
        assert isinstance(done, AttachmentStored), done
        attachments.append(done.attachment)
    attachments_bind(
        user=user, conversation=conversation, message=question, attachment_ids=[a.pk for a in attachments]
    )
    MessageFactory(
        conversation=conversation, run=run, role="assistant", content="Trains under 600 CNY are fine."
    )
    return {
        "conversation": str(conversation.pk),
        "pdf": str(attachments[0].pk),
        "png": str(attachments[1].pk),
    }


@pytest.fixture(scope="module")
def reading_agent(e2e_server) -> dict[str, str]:
    return e2e_server.build("tests.e2e.test_chat_attachments:build_reading_agent")


# --- what the user does -------------------------------------------------------------------------------------

FILES_JS = """(files) => {
  const transfer = new DataTransfer();
  for (const [name, b64, type] of files) {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    transfer.items.add(new File([bytes], name, { type }));
  }
  return transfer;
}"""


def _payload(*named: tuple[str, bytes, str]) -> list[list[str]]:
    return [[name, base64.b64encode(data).decode(), kind] for name, data, kind in named]


def drag_and_drop(page, target: str, *named: tuple[str, bytes, str]) -> None:
    """Drag files from the desktop over ``target`` (the drop zone shows itself) and drop them there."""
    transfer = page.evaluate_handle(FILES_JS, _payload(*named))
    page.dispatch_event(target, "dragenter", {"dataTransfer": transfer})
    page.dispatch_event(target, "dragover", {"dataTransfer": transfer})
    expect(page.locator(".chat-pane")).to_have_class(re.compile(r"\bdropping\b"))
    page.dispatch_event(target, "drop", {"dataTransfer": transfer})
    expect(page.locator(".chat-pane")).not_to_have_class(re.compile(r"\bdropping\b"))


def paste(page, *named: tuple[str, bytes, str]) -> None:
    """Paste files into the message box, as a screenshot copied to the clipboard pastes (``image.png``)."""
    page.evaluate(
        f"""(files) => {{
          const transfer = ({FILES_JS})(files);
          const input = document.getElementById("composer-input");
          input.focus();
          input.dispatchEvent(new ClipboardEvent("paste", {{ clipboardData: transfer, bubbles: true, cancelable: true }}));
        }}""",
        _payload(*named),
    )


def pick(page, tmp_path: Path, *named: tuple[str, bytes]) -> None:
    """Choose files with the paperclip's file picker."""
    paths = []
    for name, data in named:
        path = tmp_path / name
        path.write_bytes(data)
        paths.append(str(path))
    with page.expect_file_chooser() as chooser:
        page.click("#attach-button")
    chooser.value.set_files(paths)


def chip(page, name: str | re.Pattern[str]):
    return page.locator(".attachment-chip").filter(has=page.locator(".attachment-name", has_text=name))


def expect_stored(page, name: str | re.Pattern[str]) -> str:
    """Wait for the chip's upload to end stored; its attachment's id."""
    found = chip(page, name)
    expect(found).to_have_attribute("data-state", "stored")
    expect(found.locator("progress")).to_have_js_property("value", 100)
    return found.get_attribute("data-id")


def record_sent_frames(page) -> list[dict]:
    sent: list[dict] = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda payload: sent.append(json.loads(payload))))
    return sent


def messages_sent(sent: list[dict]) -> list[dict]:
    return [frame for frame in sent if frame.get("type") == "message"]


def attachment_rows(e2e_server, attachment_id: str) -> list[tuple[object, ...]]:
    return e2e_server.query(
        "SELECT name, message_id FROM agents_attachment WHERE id = ?", (attachment_id.replace("-", ""),)
    )


def stored_files(e2e_server, attachment_id: str) -> list[Path]:
    return [path for path in Path(e2e_server.env["MEDIA_ROOT"]).rglob(f"{attachment_id}/*") if path.is_file()]


# --- tests --------------------------------------------------------------------------------------------------


def test_a_dropped_pdf_and_a_pasted_screenshot_upload_at_once_as_chips_with_type_size_and_progress(
    make_page, e2e_server, reading_agent
):
    page = make_page(width=1280, height=900)
    problems: list[str] = []  # the strict policy's refusals and the page's errors
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    open_new_chat(page, READING_AGENT)
    expect(page.locator("#attach-limits")).to_have_text("Up to 20.0\xa0MB a file, 50.0\xa0MB a message")

    drag_and_drop(page, "#chat-scroll", ("travel-policy.pdf", POLICY_PDF, "application/pdf"))
    paste(page, ("image.png", png(), "image/png"))

    pdf_id = expect_stored(page, "travel-policy.pdf")
    shot_id = expect_stored(page, SCREENSHOT_NAME)
    expect(chip(page, "travel-policy.pdf").locator(".attachment-meta")).to_have_text(
        re.compile(r"^PDF · [\d.]+ (kB|bytes)$")
    )
    expect(chip(page, SCREENSHOT_NAME).locator(".attachment-meta")).to_have_text(
        re.compile(r"^PNG · \d+ bytes$")
    )
    expect(chip(page, SCREENSHOT_NAME).locator(".attachment-thumb img")).to_be_visible()  # a thumbnail
    expect(page.locator("#send-button")).to_be_enabled()
    # Both wait on the server as the member's pending uploads, with their files.
    assert attachment_rows(e2e_server, pdf_id) == [("travel-policy.pdf", None)]
    assert attachment_rows(e2e_server, shot_id)[0][1] is None
    assert stored_files(e2e_server, pdf_id) and stored_files(e2e_server, shot_id)
    assert problems == []

    page.fill("#composer-input", "Does my train ticket of 480 CNY need an approval?")
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    page.locator("#composer").screenshot(path=str(SCREENSHOT))
    assert 0 < SCREENSHOT.stat().st_size < MAX_SCREENSHOT_BYTES


def test_sending_sends_the_uploaded_files_ids_with_the_text_and_the_message_shows_them(
    make_page, e2e_server, scripted_llm, reading_agent
):
    scripted_llm.script(text("The policy says trains under 600 CNY need no approval."))
    page = make_page()
    sent = record_sent_frames(page)
    open_new_chat(page, READING_AGENT)
    drag_and_drop(page, "#composer", ("travel-policy.pdf", POLICY_PDF, "application/pdf"))
    pdf_id = expect_stored(page, "travel-policy.pdf")

    page.fill("#composer-input", "Summarise the policy.")
    page.press("#composer-input", "Enter")

    page.wait_for_url(CONVERSATION_URL)
    expect(page.locator(".run-footer")).to_be_visible()
    assert messages_sent(sent) == [
        {"type": "message", "content": "Summarise the policy.", "attachments": [pdf_id]}
    ]
    expect(page.locator(".attachment-chip")).to_have_count(0)
    expect(page.locator("#attachment-tray")).to_be_hidden()
    sent_files = page.locator(".turn .msg-attachment")
    expect(sent_files).to_have_count(1)
    link = sent_files.locator("a.msg-attachment-name")
    expect(link).to_have_text("travel-policy.pdf")
    expect(link).to_have_attribute("href", f"/o/acme/attachments/{pdf_id}/download/")
    expect(sent_files.locator(".msg-attachment-meta")).to_contain_text("PDF · ")


def test_the_answer_uses_the_pdf_and_the_screenshot_and_the_history_shows_them_with_download_links(
    make_page, e2e_server, scripted_llm, reading_agent
):
    asked: list[dict] = []

    def answer(body):
        asked.append(body)
        return text("Under 600 CNY a train needs no approval, and your ticket is 480 CNY.")

    scripted_llm.script(answer)
    page = make_page()
    open_new_chat(page, READING_AGENT)
    drag_and_drop(page, "#chat-scroll", ("travel-policy.pdf", POLICY_PDF, "application/pdf"))
    paste(page, ("image.png", png(), "image/png"))
    pdf_id = expect_stored(page, "travel-policy.pdf")
    shot_id = expect_stored(page, SCREENSHOT_NAME)
    page.fill("#composer-input", "Does the ticket in the screenshot need an approval?")
    page.press("#composer-input", "Enter")

    expect(page.locator(".answer")).to_contain_text("your ticket is 480 CNY")
    # The model read both: the PDF's text and the screenshot as an image.
    request = json.dumps(asked[0])
    assert POLICY_TEXT in request
    assert "data:image/png;base64," in request
    # They belong to the message now, and the history shows them after a reload, with working links.
    assert attachment_rows(e2e_server, pdf_id)[0][1] is not None
    assert attachment_rows(e2e_server, shot_id)[0][1] is not None
    page.reload()
    expect(page.locator("#chat")).to_have_attribute("data-ready", "1")
    files = page.locator(".turn .msg-attachment a.msg-attachment-name")
    expect(files).to_have_count(2)
    expect(files.first).to_have_text("travel-policy.pdf")
    expect(files.nth(1)).to_have_text(SCREENSHOT_NAME)
    download = page.request.get(f"{e2e_server.url}{files.first.get_attribute('href')}")
    assert download.status == 200 and download.body() == POLICY_PDF


def test_a_file_removed_before_sending_is_deleted_on_the_server(
    make_page, e2e_server, tmp_path, reading_agent
):
    page = make_page()
    open_new_chat(page, READING_AGENT)
    pick(page, tmp_path, ("notes.txt", b"Meeting notes: order more paper."), ("keep.md", b"# Keep me"))
    notes_id = expect_stored(page, "notes.txt")
    expect_stored(page, "keep.md")
    assert attachment_rows(e2e_server, notes_id) and stored_files(e2e_server, notes_id)

    page.click("button[aria-label='Remove notes.txt']")

    expect(chip(page, "notes.txt")).to_have_count(0)
    expect(page.locator(".attachment-chip")).to_have_count(1)
    wait_for(lambda: not attachment_rows(e2e_server, notes_id), what="the upload's row to be deleted")
    wait_for(lambda: not stored_files(e2e_server, notes_id), what="the upload's file to be deleted")


@pytest.fixture
def small_file_limit(e2e_server):
    """The server restarted with a 4 KiB limit for one attached file (restored afterwards)."""
    e2e_server.env["ATTACHMENT_MAX_FILE_BYTES"] = str(4 * 1024)
    e2e_server.restart()
    try:
        yield 4 * 1024
    finally:
        del e2e_server.env["ATTACHMENT_MAX_FILE_BYTES"]
        e2e_server.restart()


def test_refused_files_say_why_on_their_chips_and_are_not_sent(
    small_file_limit, make_page, e2e_server, scripted_llm, tmp_path, reading_agent
):
    from tests.agents.attachments.files import pdf

    scripted_llm.script(text("Noted."))
    page = make_page()
    sent = record_sent_frames(page)
    open_new_chat(page, READING_AGENT)
    expect(page.locator("#attach-limits")).to_contain_text("Up to 4.0\xa0KB a file")

    pick(
        page,
        tmp_path,
        ("big.txt", b"x" * (6 * 1024)),
        ("locked.pdf", pdf(password="secret")),
        ("fine.txt", b"A small note."),
    )

    big = chip(page, "big.txt")
    expect(big).to_have_attribute("data-state", "refused")
    expect(big.locator(".attachment-message")).to_have_text(
        "The file is larger than the limit of 4 kB for one file."
    )
    locked = chip(page, "locked.pdf")
    expect(locked).to_have_attribute("data-state", "refused")  # the server's refusal, in the user's language
    expect(locked.locator(".attachment-message")).to_have_text(
        "The file is protected by a password. Remove the password and upload it again."
    )
    fine_id = expect_stored(page, "fine.txt")
    assert e2e_server.query(
        "SELECT count(*) FROM agents_attachment WHERE name IN ('big.txt', 'locked.pdf')"
    ) == [(0,)]

    page.fill("#composer-input", "Here is the note.")
    page.press("#composer-input", "Enter")

    expect(page.locator(".turn .msg-attachment")).to_have_count(1)
    expect(page.locator(".run-footer")).to_be_visible()
    assert messages_sent(sent)[0]["attachments"] == [fine_id]


def test_a_picture_for_an_agent_whose_model_cannot_read_images_is_stopped_before_sending(
    make_page, e2e_server, tmp_path
):
    page = make_page()
    sent = record_sent_frames(page)
    open_new_chat(page, BLIND_AGENT)
    uploads_before = e2e_server.query("SELECT count(*) FROM agents_attachment")

    paste(page, ("image.png", png(), "image/png"))

    shot = chip(page, SCREENSHOT_NAME)
    expect(shot).to_have_attribute("data-state", "unreadable")
    expect(shot.locator(".attachment-message")).to_have_text("This agent's model cannot read images")
    notice = page.locator("#attachment-notice")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text("This agent's model cannot read images.")
    expect(page.locator("#send-button")).to_be_disabled()
    page.fill("#composer-input", "What does the screenshot show?")
    page.press("#composer-input", "Enter")
    expect(page.locator(".turn")).to_have_count(0)  # not sent
    assert messages_sent(sent) == []
    assert e2e_server.query("SELECT count(*) FROM agents_attachment") == uploads_before  # nor uploaded

    shot.locator(".attachment-remove").click()
    expect(page.locator(".attachment-chip")).to_have_count(0)
    expect(notice).to_be_hidden()
    expect(page.locator("#send-button")).to_be_enabled()


def test_the_composer_with_files_keeps_to_a_phone_screen(make_page, tmp_path, reading_agent):
    page = make_page(width=390, height=844)
    open_new_chat(page, READING_AGENT)
    pick(page, tmp_path, ("a-very-long-file-name-of-the-quarterly-purchasing-report-2026.txt", b"Numbers."))
    expect_stored(page, re.compile("quarterly"))
    paste(page, ("image.png", png(), "image/png"))
    expect_stored(page, SCREENSHOT_NAME)

    for control in ("#attach-button", "#send-button", "#composer-input"):
        expect(page.locator(control)).to_be_in_viewport()
    widths = page.evaluate(
        "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth,"
        " document.getElementById('composer').scrollWidth, document.getElementById('composer').clientWidth]"
    )
    assert widths[0] <= widths[1] and widths[2] <= widths[3], widths


def test_the_history_lists_the_files_sent_with_a_message_and_each_downloads(make_page, e2e_server):
    built = e2e_server.build("tests.e2e.test_chat_attachments:build_conversation_with_files")
    page = make_page()

    page.goto(f"{e2e_server.url}/o/acme/chat/{built['conversation']}/")

    expect(page.locator("#chat")).to_have_attribute("data-ready", "1")
    turn = page.locator(".turn").first
    expect(turn.locator(".msg.user")).to_have_text("What does the policy say?")
    files = turn.locator(".msg-attachment")
    expect(files).to_have_count(2)
    expect(files.first.locator("a")).to_have_text("travel-policy.pdf")
    expect(files.first.locator(".msg-attachment-meta")).to_have_text(re.compile(r"^PDF · "))
    expect(files.nth(1).locator("a")).to_have_text("receipt.png")
    expect(files.nth(1)).to_have_attribute("data-kind", "image")
    href = files.first.locator("a").get_attribute("href")
    assert href == f"/o/acme/attachments/{built['pdf']}/download/"
    download = page.request.get(f"{e2e_server.url}{href}")
    assert download.status == 200 and download.body() == POLICY_PDF
    expect(turn.locator(".answer")).to_have_text("Trains under 600 CNY are fine.")


def test_a_message_the_server_refuses_gives_its_text_and_its_files_back_to_the_box(
    make_page, e2e_server, scripted_llm, reading_agent
):
    # Given a socket whose server refuses the first message with files (as it does a picture for a model
    # that cannot read images), and lets the next one through
    scripted_llm.script(text("Read it."))
    page = make_page()
    refused: list[dict] = []

    def connect(route):
        server = route.connect_to_server()

        def from_page(message):
            frame = json.loads(message)
            if frame.get("type") == "message" and frame.get("attachments") and not refused:
                refused.append(frame)
                error = {
                    "code": "model_cannot_read_images",
                    "message": "This agent's model cannot read images.",
                }
                route.send(json.dumps({"seq": None, "run_id": None, "event": "error", "data": error}))
            else:
                server.send(message)

        route.on_message(from_page)
        server.on_message(lambda message: route.send(message))

    page.route_web_socket(re.compile(r"/ws/conversations/"), connect)
    open_new_chat(page, READING_AGENT)
    drag_and_drop(page, "#chat-scroll", ("travel-policy.pdf", POLICY_PDF, "application/pdf"))
    pdf_id = expect_stored(page, "travel-policy.pdf")

    # When the user sends it
    page.fill("#composer-input", "Summarise the policy.")
    page.press("#composer-input", "Enter")

    # Then the message is marked not sent, and its text and file are back in the box, still uploaded
    expect(page.locator(".turn.not-sent")).to_have_count(1)
    expect(page.locator("#composer-input")).to_have_value("Summarise the policy.")
    expect(chip(page, "travel-policy.pdf")).to_have_attribute("data-state", "stored")
    assert chip(page, "travel-policy.pdf").get_attribute("data-id") == pdf_id
    assert refused and refused[0]["attachments"] == [pdf_id]
    assert attachment_rows(e2e_server, pdf_id) == [("travel-policy.pdf", None)]

    # And sending again sends the same file
    page.press("#composer-input", "Enter")
    expect(page.locator(".turn:not(.not-sent) .run-footer")).to_be_visible()
    expect(page.locator(".attachment-chip")).to_have_count(0)
    expect(page.locator(".turn:not(.not-sent) .msg-attachment a")).to_have_text("travel-policy.pdf")
