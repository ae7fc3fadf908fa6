"""A long attached document is indexed, at upload, in the organisation's chat files, and a run of its
conversation searches the whole of it through ``chat_files__search``: a connector's call, judged by the
guard rails and recorded in the call log, its passages cited with the attachment's download link. Another
conversation's, another user's or another organisation's files are never found; the chat files are no
administrator's knowledge base and no agent's connector; deleting the file deletes its passages."""

from __future__ import annotations

import json
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.core.files.base import ContentFile

from agents import runtime
from agents.attachments.indexing import chat_files_base
from agents.attachments.models import Attachment
from agents.attachments.services import (
    AttachmentStored,
    attachment_upload,
    attachments_bind,
    attachments_delete_for_conversation,
)
from agents.engine.hooks import HookRegistry
from agents.engine.react import ReActAgent
from agents.engine.tool_context import ToolCallContext
from agents.knowledge.ingestion import document_ingest
from agents.knowledge.models import Chunk, Document, DocumentStatus, KnowledgeBaseKind
from connectors.models import CallStatus, ConnectorCallLog
from hooks.registry import guard_rail_hooks
from platform_core.models import Role
from tests.agents.factories import (
    AgentFactory,
    ConversationFactory,
    MessageFactory,
    ModelConfigFactory,
    RunFactory,
)
from tests.factories import OrganizationFactory, member_of
from tests.fakes.openai_server import call, text, tool_calls

TOOL = "chat_files__search"


def contract(clause: str) -> bytes:
    """A supply contract of about 110,000 characters whose last line is ``clause``."""
    lines = [f"Section {n}: the supplier delivers the ordered parts on schedule." for n in range(1700)]
    return "\n".join([*lines, clause]).encode()


def sent_long_file(
    org, user, agent, clause: str, name: str = "contract.txt", *, indexed: bool = True
) -> tuple[Any, Attachment]:
    """A conversation of ``user`` whose question carries a long file ending with ``clause``, indexed as
    the worker its upload queued would (unless not ``indexed`` yet), and the question's run."""
    conversation = ConversationFactory(organization=org, agent=agent, user=user)
    uploaded = attachment_upload(
        organization=org, user=user, name=name, content=ContentFile(contract(clause), name=name)
    )
    assert isinstance(uploaded, AttachmentStored), uploaded
    attachment = uploaded.attachment
    if indexed:
        document_ingest(Document.objects.for_org(org).get(attachment=attachment).pk)
    run = RunFactory(conversation=conversation, user=user, status="running")
    message = MessageFactory(conversation=conversation, content="What is the penalty?", run=run)
    attachments_bind(user=user, conversation=conversation, message=message, attachment_ids=[attachment.pk])
    return run, attachment


def agent_of(org, llm_base_url: str = "http://127.0.0.1:9/v1"):
    ModelConfigFactory(organization=org, base_url=llm_base_url, is_default=True)
    return AgentFactory(organization=org, name="Contracts assistant")


async def searched(blueprint: runtime.RunBlueprint, query: str) -> str:
    """What the run's chat-files tool answers ``query``."""
    tools = await database_sync_to_async(runtime.tools_for)(blueprint)
    tool = tools.get(TOOL)
    assert tool is not None
    result = await tool.execute(
        ToolCallContext(tool_name=TOOL, tool_call_id="c1", run=blueprint.context), query=query
    )
    return result.content


@pytest.mark.django_db(transaction=True)
async def test_the_agent_searches_the_rest_of_a_long_file_and_the_call_is_logged_and_cited(
    scripted_llm, make_llm
):
    org = await database_sync_to_async(OrganizationFactory)()
    user = await database_sync_to_async(member_of)(org, Role.MEMBER)
    agent = await database_sync_to_async(agent_of)(org, scripted_llm.base_url)
    run, attachment = await database_sync_to_async(sent_long_file)(
        org, user, agent, "Late delivery costs the supplier a penalty of seven percent."
    )
    blueprint = await database_sync_to_async(runtime.runtime_build)(run.pk)
    scripted_llm.script(
        tool_calls(call(TOOL, {"query": "penalty for late delivery"})),
        text("Seven percent [1]."),
    )

    def build():
        return runtime.tools_for(blueprint), HookRegistry(guard_rail_hooks(blueprint).hooks)

    tools, hooks = await database_sync_to_async(build)()
    react = ReActAgent(make_llm(), tools, hooks=hooks, max_iterations=5, completion_check=False)
    events: list[Any] = []

    async def on_event(event: Any) -> None:
        events.append(event)

    await react.run(
        "What is the penalty?",
        attachments=blueprint.attachments,
        metadata=blueprint.context.as_metadata(),
        on_event=on_event,
    )

    first, second = scripted_llm.requests[0], scripted_llm.requests[1]
    assert TOOL in [tool["function"]["name"] for tool in first["tools"]]
    shown = first["messages"][-1]["content"][1]["text"]
    assert "penalty" not in shown and shown.endswith(f"[Search the whole file with the tool {TOOL}.]")
    passages = next(m["content"] for m in second["messages"] if m["role"] == "tool")
    assert passages.startswith("[1] contract.txt") and "penalty of seven percent" in passages
    (cited,) = [e.data["citations"] for e in events if e.data.get("citations")]
    assert cited[0]["url"] == f"/o/{org.slug}/attachments/{attachment.pk}/download/"
    log = await database_sync_to_async(lambda: ConnectorCallLog.objects.for_org(org).get(tool_name=TOOL))()
    assert log.status == CallStatus.OK and not log.is_write and log.user_id == user.pk
    assert log.arguments == {"query": "penalty for late delivery"} and log.retrieved
    assert "seven percent" not in json.dumps(log.retrieved)


@pytest.mark.django_db(transaction=True)
async def test_a_conversation_finds_only_its_own_files_never_another_users_or_organisations():
    def world():
        org, other_org = OrganizationFactory(), OrganizationFactory()
        alice, bob = member_of(org, Role.MEMBER), member_of(org, Role.MEMBER)
        carol = member_of(other_org, Role.MEMBER)
        agent, other_agent = agent_of(org), agent_of(other_org)
        mine, _ = sent_long_file(org, alice, agent, "The penalty is seven percent.")
        sent_long_file(org, alice, agent, "The penalty is eleven percent.")  # her other conversation
        sent_long_file(org, bob, agent, "The penalty is twelve percent.")
        sent_long_file(other_org, carol, other_agent, "The penalty is ninety percent.")
        return runtime.runtime_build(mine.pk)

    blueprint = await database_sync_to_async(world)()

    found = await searched(blueprint, "penalty percent")

    assert "seven percent" in found
    assert not any(other in found for other in ("eleven", "twelve", "ninety"))


@pytest.mark.django_db(transaction=True)
async def test_a_file_still_being_indexed_is_named_so_the_model_can_say_so():
    def world():
        org = OrganizationFactory()
        run, _ = sent_long_file(org, member_of(org, Role.MEMBER), agent_of(org), "Seven.", indexed=False)
        return runtime.runtime_build(run.pk)

    blueprint = await database_sync_to_async(world)()

    found = await searched(blueprint, "penalty")

    assert "Not searched yet: contract.txt (still being indexed" in found


@pytest.mark.django_db
def test_a_short_file_or_a_picture_is_not_indexed_and_gives_no_search(org, member):
    agent = agent_of(org)
    conversation = ConversationFactory(organization=org, agent=agent, user=member)
    run = RunFactory(conversation=conversation, user=member, status="running")
    message = MessageFactory(conversation=conversation, content="Prices?", run=run)
    short = attachment_upload(
        organization=org, user=member, name="prices.csv", content=ContentFile(b"item,price\nbolt,2\n")
    )
    assert isinstance(short, AttachmentStored)
    attachments_bind(
        user=member, conversation=conversation, message=message, attachment_ids=[short.attachment.pk]
    )

    blueprint = runtime.runtime_build(run.pk)

    assert not Document.objects.for_org(org).exists() and blueprint.chat_files is None
    assert TOOL not in runtime.tools_for(blueprint).names()


@pytest.mark.django_db
def test_the_chat_files_are_no_knowledge_base_of_the_admins_and_no_agents_connector(org, member, client_for):
    admin = member_of(org, Role.ADMIN)
    agent = agent_of(org)
    sent_long_file(org, member, agent, "The penalty is seven percent.")
    chat_files = chat_files_base(org)
    client = client_for(admin)

    listed = client.get(f"/api/v1/orgs/{org.slug}/knowledge-bases/").json()
    documents = client.get(f"/api/v1/orgs/{org.slug}/knowledge-bases/{chat_files.pk}/documents/")
    document = Document.objects.for_org(org).get()
    download = client.get(f"/o/{org.slug}/knowledge/documents/{document.pk}/download/")
    given = client.patch(
        f"/api/v1/orgs/{org.slug}/agents/{agent.pk}/",
        {"connectors": [str(chat_files.connector_id)]},
        content_type="application/json",
    )

    assert listed["count"] == 0 if "count" in listed else listed == []
    assert documents.status_code == 404 and download.status_code == 404
    assert given.status_code == 400 and not agent.connectors.exists()
    assert chat_files.kind == KnowledgeBaseKind.CHAT_FILES and chat_files.connector.name == "chat_files"


@pytest.mark.django_db
def test_deleting_the_conversation_deletes_the_files_passages(org, member):
    agent = agent_of(org)
    run, attachment = sent_long_file(org, member, agent, "The penalty is seven percent.")
    assert Chunk.objects.for_org(org).exists()
    assert Document.objects.for_org(org).get(attachment=attachment).status == DocumentStatus.READY

    attachments_delete_for_conversation(conversation=run.conversation, actor=member)

    assert not Document.objects.for_org(org).exists() and not Chunk.objects.for_org(org).exists()


@pytest.mark.django_db
def test_switching_the_chat_files_connector_off_removes_the_search(org, member):
    agent = agent_of(org)
    run, _ = sent_long_file(org, member, agent, "The penalty is seven percent.")
    connector = chat_files_base(org).connector
    connector.is_active = False
    connector.save()

    blueprint = runtime.runtime_build(run.pk)

    assert blueprint.chat_files is None and TOOL not in runtime.tools_for(blueprint).names()


@pytest.mark.django_db
def test_the_chat_files_connector_takes_the_next_free_name_when_chat_files_is_taken(org):
    from tests.factories import ConnectorFactory

    ConnectorFactory(organization=org, name="chat_files")
    ConnectorFactory(organization=org, name="chat_files_2")

    assert chat_files_base(org).connector.name == "chat_files_3"
