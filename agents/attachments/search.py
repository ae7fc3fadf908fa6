"""A run's search over the long documents attached to its conversation (``chat_files__search``).

The conversation's documents indexed in the organisation's chat files (:mod:`agents.attachments.indexing`)
are searched by the knowledge bases' search, limited to them (:class:`~agents.knowledge.tool.DocumentsScope`)
and cited with their attachments' download links. The tool is the chat files' connector's action, which
:func:`chat_files_of_conversation` adds to the run's connectors: the guard rails judge it, and the call log
records it, as any connector's. An inactive connector (switched off by its administrators) gives no tool.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Protocol

from django.urls import reverse

from agents.engine.tools import Tool
from agents.knowledge.models import Document, KnowledgeBaseKind
from agents.knowledge.tool import CitationNumbers, DocumentsScope, KnowledgeSearchTool
from connectors.knowledge.kind import SEARCH_ACTION
from connectors.selectors import RunActionsSource, run_connector_actions
from connectors.tools import tool_name_for

__all__ = ["ChatFiles", "chat_files_of_conversation", "chat_files_tools_for_run"]


@dataclass(frozen=True, slots=True)
class ChatFiles:
    """A conversation's indexed documents (each one's attachment) and the chat files' connector."""

    connector_id: str
    connector_name: str
    attachments: dict[uuid.UUID, uuid.UUID]  # document id -> attachment id

    @property
    def tool_name(self) -> str:
        return tool_name_for(self.connector_name, SEARCH_ACTION)


def chat_files_of_conversation(*, organization_id: int, conversation_id: uuid.UUID) -> ChatFiles | None:
    """The conversation's documents in the chat files, when it has any and their connector is active
    (sync: one query)."""
    rows = list(
        Document.objects.for_org(organization_id)
        .filter(
            attachment__conversation_id=conversation_id,
            knowledge_base__kind=KnowledgeBaseKind.CHAT_FILES,
            knowledge_base__connector__is_active=True,
        )
        .values_list("pk", "attachment_id", "knowledge_base__connector_id", "knowledge_base__connector__name")
    )
    if not rows:
        return None
    return ChatFiles(
        connector_id=str(rows[0][2]),
        connector_name=rows[0][3],
        attachments={document_id: attachment_id for document_id, attachment_id, _, _ in rows},
    )


class _ChatFilesRun(RunActionsSource, Protocol):
    """What :func:`chat_files_tools_for_run` needs of a run (``agents.runtime.RunBlueprint`` has it): its
    actions' source, and its chat files."""

    @property
    def chat_files(self) -> ChatFiles | None: ...


def chat_files_tools_for_run(run: _ChatFilesRun) -> list[Tool]:
    """The run's search of its conversation's long documents, when it has some (sync)."""
    chat_files, context = run.chat_files, run.context
    if chat_files is None or context.org_id is None:
        return []
    action = next(
        (
            action
            for action in run_connector_actions(run)
            if str(action.connector_id) == chat_files.connector_id and action.name == SEARCH_ACTION
        ),
        None,
    )
    if action is None:
        return []
    knowledge_base = action.connector.knowledge_base
    links = {
        document_id: reverse(
            "attachment-file", kwargs={"org_slug": context.org_slug, "attachment_id": attachment_id}
        )
        for document_id, attachment_id in chat_files.attachments.items()
    }
    return [KnowledgeSearchTool(knowledge_base, action, context, CitationNumbers(), DocumentsScope(links))]
