"""Files sent with a question over MCP, through a real daphne server and the official MCP SDK client: the
``attachments`` argument's embedded resources (a text resource, a base64 blob) and resource links to the
caller's uploads reach the agent's model as a chat's attachments do; a refused call names the item at fault
and leaves nothing behind (no run, no message, no conversation, no file); another user's or another
organisation's upload cannot be sent."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from channels.db import database_sync_to_async
from django.core.files.base import ContentFile

from agents.attachments.models import Attachment
from agents.attachments.services import AttachmentStored, attachment_upload
from agents.models import Conversation, Message, Run
from platform_core.identity.api_keys.keys import api_token_issue
from platform_core.models import Role
from tests.agents.attachments.conftest import stored_files
from tests.agents.attachments.files import image
from tests.agents.factories import AgentFactory, ModelConfigFactory
from tests.agents.mcp_endpoint.live import daphne_on_test_database, mcp_session
from tests.factories import OrganizationFactory, member_of
from tests.fakes.openai_replies import text

pytestmark = pytest.mark.django_db(transaction=True)

PRICES = "item,price\nbolt,2\nnut,1\n"
TOOL = "purchasing_assistant"


@pytest.fixture(scope="module")
def media_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("mcp-media")


@pytest.fixture(scope="module")
def daphne_url(django_db_setup, django_db_blocker, tmp_path_factory, media_dir) -> Iterator[str]:
    """The deployment's daphne, storing files where this process looks for them."""
    log_dir = tmp_path_factory.mktemp("daphne-mcp-attachments")
    with daphne_on_test_database(django_db_blocker, log_dir, extra_env={"MEDIA_ROOT": str(media_dir)}) as url:
        yield url


@pytest.fixture(autouse=True)
def media_root(settings, media_dir) -> Path:
    settings.MEDIA_ROOT = str(media_dir)
    return media_dir


@dataclass
class World:
    url: str
    key: str
    user_id: int
    org_id: int
    teammate_id: int
    other_org_id: int
    other_user_id: int


def _world(daphne_url: str, llm_base_url: str, *, vision: bool = False) -> World:
    org = OrganizationFactory(slug="acme", name="Acme")
    mia = member_of(org, Role.MEMBER, username="mia")
    april = member_of(org, Role.APPROVER, username="april")
    ModelConfigFactory(organization=org, base_url=llm_base_url, is_default=True, vision=vision)
    AgentFactory(
        organization=org, name="Purchasing assistant", instructions="Be brief.", exposed_over_mcp=True
    )
    other = OrganizationFactory(slug="globex", name="Globex")
    gus = member_of(other, Role.ADMIN, username="gus")
    return World(
        url=f"{daphne_url}/mcp/orgs/{org.slug}/",
        key=api_token_issue(user=mia, name="desktop")[1],
        user_id=mia.pk,
        org_id=org.pk,
        teammate_id=april.pk,
        other_org_id=other.pk,
        other_user_id=gus.pk,
    )


def _upload(organization_id: int, user_id: int, name: str, data: bytes) -> str:
    from django.contrib.auth import get_user_model

    from platform_core.models import Organization

    stored = attachment_upload(
        organization=Organization.objects.get(pk=organization_id),
        user=get_user_model().objects.get(pk=user_id),
        name=name,
        content=ContentFile(data, name=name),
    )
    assert isinstance(stored, AttachmentStored), stored
    return str(stored.attachment.pk)


def _text_resource(uri: str, body: str, mime_type: str | None = None) -> dict[str, Any]:
    """An embedded text resource, as the SDK's own types write it."""
    resource = types.TextResourceContents(uri=uri, mime_type=mime_type, text=body)
    return types.EmbeddedResource(resource=resource).model_dump(by_alias=True, mode="json", exclude_none=True)


def _blob_resource(uri: str, data: bytes | str, mime_type: str) -> dict[str, Any]:
    blob = data if isinstance(data, str) else base64.b64encode(data).decode()
    resource = types.BlobResourceContents(uri=uri, mime_type=mime_type, blob=blob)
    return types.EmbeddedResource(resource=resource).model_dump(by_alias=True, mode="json", exclude_none=True)


def _upload_link(attachment_id: str, name: str) -> dict[str, Any]:
    link = types.ResourceLink(uri=f"attachment:{attachment_id}", name=name)
    return link.model_dump(by_alias=True, mode="json", exclude_none=True)


def _question_parts(request: dict[str, Any]) -> list[dict[str, Any]]:
    return request["messages"][-1]["content"]


def _recorded(org_id: int) -> dict[str, int]:
    return {
        "conversations": Conversation.objects.unscoped().filter(organization_id=org_id).count(),
        "runs": Run.objects.unscoped().count(),
        "messages": Message.objects.count(),
        "attachments": Attachment.objects.unscoped().count(),
    }


def _attachments_of(conversation_id: str) -> list[tuple[str, str, bool]]:
    """The conversation's attachments: name, content type, and whether still pending."""
    return [
        (a.name, a.content_type, a.pending)
        for a in Attachment.objects.unscoped().filter(conversation_id=conversation_id).order_by("created_at")
    ]


def _pending(attachment_id: str) -> bool:
    return Attachment.objects.unscoped().get(pk=attachment_id).pending


async def test_the_agent_reads_a_csv_sent_as_an_embedded_text_resource(daphne_url, scripted_llm):
    world = await database_sync_to_async(_world)(daphne_url, scripted_llm.base_url)
    scripted_llm.script(text("A bolt costs 2."), text("A bolt costs 2."))

    async with mcp_session(world.url, world.key) as session:
        listed = await session.list_tools()
        result = await session.call_tool(
            TOOL,
            {
                "question": "What does a bolt cost?",
                "attachments": [_text_resource("file:///reports/prices.csv", PRICES, "text/csv")],
            },
        )

    shape = listed.tools[0].input_schema["properties"]["attachments"]
    kinds = [option["properties"]["type"]["const"] for option in shape["items"]["anyOf"]]
    assert kinds == ["resource", "resource_link"] and shape["maxItems"] == 20
    assert not result.is_error, result
    question = _question_parts(scripted_llm.requests[0])
    assert question[0] == {"type": "text", "text": "What does a bolt cost?"}
    assert question[1]["text"].startswith("[Attached file: prices.csv (text/csv)]")
    assert "| bolt | 2 |" in question[1]["text"]
    attached = await database_sync_to_async(_attachments_of)(result.structured_content["conversation_id"])
    assert attached == [("prices.csv", "text/csv", False)]


async def test_a_png_blob_reaches_a_model_that_sees_as_an_image(daphne_url, scripted_llm):
    world = await database_sync_to_async(_world)(daphne_url, scripted_llm.base_url, vision=True)
    scripted_llm.script(text("A red picture."), text("A red picture."))

    async with mcp_session(world.url, world.key) as session:
        result = await session.call_tool(
            TOOL,
            {
                "question": "What is this?",
                "attachments": [_blob_resource("file:///home/mia/screen.png", image("PNG"), "image/png")],
            },
        )

    assert not result.is_error, result
    sent = _question_parts(scripted_llm.requests[0])[1]
    assert sent["type"] == "image_url" and sent["image_url"]["url"].startswith("data:image/png;base64,iVBOR")


async def test_a_file_is_named_by_its_uris_last_segment_with_its_types_extension_else_by_its_type(
    daphne_url, scripted_llm
):
    world = await database_sync_to_async(_world)(daphne_url, scripted_llm.base_url)
    scripted_llm.script(text("2."), text("2."))

    async with mcp_session(world.url, world.key) as session:
        result = await session.call_tool(
            TOOL,
            {
                "question": "Bolt?",
                "attachments": [
                    _text_resource("https://files.example.com/", "Notes: call the supplier."),
                    _blob_resource("urn:x-prices", PRICES.encode(), "text/csv"),
                    _text_resource("file:///tmp/Order%2042.md", "# Order 42", "text/markdown"),
                ],
            },
        )

    assert not result.is_error, result
    attached = await database_sync_to_async(_attachments_of)(result.structured_content["conversation_id"])
    assert sorted(name for name, _, _ in attached) == ["Order 42.md", "file-1.txt", "x-prices.csv"]


async def test_an_image_for_a_model_that_cannot_see_is_refused_and_nothing_is_left(
    daphne_url, scripted_llm, media_dir
):
    world = await database_sync_to_async(_world)(daphne_url, scripted_llm.base_url)
    files_before = stored_files(media_dir)

    async with mcp_session(world.url, world.key) as session:
        result = await session.call_tool(
            TOOL,
            {
                "question": "What is this?",
                "attachments": [
                    _text_resource("file:///prices.csv", PRICES, "text/csv"),
                    _blob_resource("file:///screen.png", image("PNG"), "image/png"),
                ],
            },
        )

    assert result.is_error
    assert result.content[0].text.startswith("This agent's model cannot read images (screen.png)")
    assert result.meta == {"code": "model_cannot_read_images"}
    assert await database_sync_to_async(_recorded)(world.org_id) == {
        "conversations": 0,
        "runs": 0,
        "messages": 0,
        "attachments": 0,
    }
    assert stored_files(media_dir) == files_before and scripted_llm.requests == []


async def test_a_refused_call_in_an_earlier_conversation_keeps_that_conversation(daphne_url, scripted_llm):
    world = await database_sync_to_async(_world)(daphne_url, scripted_llm.base_url)
    scripted_llm.script(text("Hello."), text("Hello."))

    async with mcp_session(world.url, world.key) as session:
        first = await session.call_tool(TOOL, {"question": "Hi"})
        conversation_id = first.structured_content["conversation_id"]
        refused = await session.call_tool(
            TOOL,
            {
                "question": "And this?",
                "conversation_id": conversation_id,
                "attachments": [_blob_resource("file:///screen.png", image("PNG"), "image/png")],
            },
        )

    assert refused.is_error and refused.meta == {"code": "model_cannot_read_images"}
    recorded = await database_sync_to_async(_recorded)(world.org_id)
    assert recorded == {"conversations": 1, "runs": 1, "messages": 2, "attachments": 0}


async def test_a_malformed_base64_blob_is_refused_naming_the_item_in_the_callers_language(
    daphne_url, scripted_llm
):
    world = await database_sync_to_async(_world)(daphne_url, scripted_llm.base_url)
    attachments = [
        _text_resource("file:///prices.csv", PRICES, "text/csv"),
        _blob_resource("file:///screen.png", "not base64!", "image/png"),
    ]

    async with mcp_session(world.url, world.key) as session:
        english = await session.call_tool(TOOL, {"question": "Read", "attachments": attachments})
    async with mcp_session(world.url, world.key, accept_language="zh-hans") as session:
        chinese = await session.call_tool(TOOL, {"question": "Read", "attachments": attachments})

    assert english.is_error and english.meta == {"code": "bad_file_data"}
    assert english.content[0].text == "attachments[1]: the resource's blob is not valid base64."
    assert chinese.is_error and chinese.content[0].text.startswith("attachments[1]：")
    assert "base64" in chinese.content[0].text and "不是" in chinese.content[0].text
    assert (await database_sync_to_async(_recorded)(world.org_id))["attachments"] == 0


async def test_a_file_refused_when_stored_is_named_and_the_files_stored_before_it_are_removed(
    daphne_url, scripted_llm, media_dir
):
    world = await database_sync_to_async(_world)(daphne_url, scripted_llm.base_url)
    files_before = stored_files(media_dir)

    async with mcp_session(world.url, world.key) as session:
        result = await session.call_tool(
            TOOL,
            {
                "question": "Read",
                "attachments": [
                    _text_resource("file:///prices.csv", PRICES, "text/csv"),
                    _blob_resource("file:///photo.png", image("JPEG"), "image/png"),
                ],
            },
        )

    assert result.is_error and result.meta == {"code": "extension_mismatch"}
    assert result.content[0].text.startswith("attachments[1] (photo.png): The file's content is not what")
    assert await database_sync_to_async(_recorded)(world.org_id) == {
        "conversations": 0,
        "runs": 0,
        "messages": 0,
        "attachments": 0,
    }
    assert stored_files(media_dir) == files_before


async def test_a_resource_link_sends_an_upload_of_the_caller(daphne_url, scripted_llm):
    world = await database_sync_to_async(_world)(daphne_url, scripted_llm.base_url)
    prices = await database_sync_to_async(_upload)(world.org_id, world.user_id, "prices.csv", PRICES.encode())
    scripted_llm.script(text("A nut costs 1."), text("A nut costs 1."))

    async with mcp_session(world.url, world.key) as session:
        result = await session.call_tool(
            TOOL, {"question": "And a nut?", "attachments": [_upload_link(prices, "prices.csv")]}
        )

    assert not result.is_error, result
    assert "| nut | 1 |" in _question_parts(scripted_llm.requests[0])[1]["text"]
    assert await database_sync_to_async(_attachments_of)(result.structured_content["conversation_id"]) == [
        ("prices.csv", "text/csv", False)
    ]


@pytest.mark.parametrize("owner", ["teammate", "other organisation"])
async def test_an_upload_of_someone_else_cannot_be_sent_and_stays_theirs(daphne_url, scripted_llm, owner):
    # given an upload of a teammate in the caller's organisation, or of a member of another organisation
    world = await database_sync_to_async(_world)(daphne_url, scripted_llm.base_url)
    org_id, user_id = (
        (world.org_id, world.teammate_id)
        if owner == "teammate"
        else (world.other_org_id, world.other_user_id)
    )
    theirs = await database_sync_to_async(_upload)(org_id, user_id, "prices.csv", PRICES.encode())

    # when the caller names it in a resource link
    async with mcp_session(world.url, world.key) as session:
        result = await session.call_tool(
            TOOL, {"question": "Read it", "attachments": [_upload_link(theirs, "prices.csv")]}
        )

    # then the call is refused as for a missing file, and nothing of it is recorded
    assert result.is_error and result.meta == {"code": "not_found"}
    assert result.content[0].text == "An attached file is no longer available. Attach it again."
    recorded = await database_sync_to_async(_recorded)(world.org_id)
    assert (recorded["conversations"], recorded["runs"], recorded["messages"]) == (0, 0, 0)
    assert await database_sync_to_async(_pending)(theirs) and scripted_llm.requests == []


@pytest.mark.parametrize(
    ("attachments", "code", "message"),
    [
        ("prices.csv", "bad_attachments", "attachments must be a list"),
        ([{"type": "text", "text": "hi"}], "bad_attachments", "attachments[0]: an attachment is an embedded"),
        (
            [{"type": "resource_link", "uri": "file:///prices.csv", "name": "prices.csv"}],
            "bad_attachments",
            "attachments[0]: a resource link names one of your uploads",
        ),
        (
            [{"type": "resource", "resource": {"uri": "file:///a.txt", "text": "a", "blob": "YQ=="}}],
            "bad_attachments",
            'attachments[0]: a resource has a "uri" and either',
        ),
        (
            [{"type": "resource", "resource": {"uri": "file:///a.txt", "text": ""}}],
            "empty",
            "attachments[0]: the",
        ),
        ([_text_resource(f"file:///{n}.txt", "x") for n in range(21)], "too_many_attachments", "A message"),
    ],
    ids=["not a list", "not a resource", "link to no upload", "text and blob", "empty", "too many"],
)
async def test_a_malformed_attachments_argument_is_refused_before_anything_is_stored(
    daphne_url, scripted_llm, attachments, code, message
):
    world = await database_sync_to_async(_world)(daphne_url, scripted_llm.base_url)

    async with mcp_session(world.url, world.key) as session:
        result = await session.call_tool(TOOL, {"question": "Read", "attachments": attachments})

    assert result.is_error and result.meta == {"code": code}
    assert result.content[0].text.startswith(message)
    assert await database_sync_to_async(_recorded)(world.org_id) == {
        "conversations": 0,
        "runs": 0,
        "messages": 0,
        "attachments": 0,
    }


async def test_a_file_larger_than_the_sdks_default_body_cap_is_accepted(daphne_url, scripted_llm):
    # given a 5 MiB document: its request passes the SDK's own 4 MiB cap on a body
    world = await database_sync_to_async(_world)(daphne_url, scripted_llm.base_url)
    scripted_llm.script(text("A long contract."), text("A long contract."))
    contract = "".join(f"clause {n} of the supply contract\n" for n in range(180_000))
    assert len(contract) > 5 * 1024 * 1024

    async with mcp_session(world.url, world.key) as session:
        result = await session.call_tool(
            TOOL, {"question": "Summarise", "attachments": [_text_resource("file:///contract.txt", contract)]}
        )

    assert not result.is_error, result
    assert "[The file is longer" in _question_parts(scripted_llm.requests[0])[1]["text"]
