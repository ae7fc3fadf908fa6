"""A knowledge base as a run's tool, ``<name>__search``, judged by the guard rails as any connector's.

The tool has its knowledge base's connector's name and action, so the run's guard-rail catalogue (built
from the same connector actions) finds it: read-only mode allows it (a search never writes), rate limits,
budgets and approval policies of its connector apply, and the audit hook records every call before it
runs, with the query as its arguments and, from :attr:`CallOutcome.retrieved`, which documents and
passages were returned with their scores (never their text). The run's tools only include the
knowledge bases the run's user may read, and each call checks again (access may change mid-run).

A search embeds its question when the knowledge base is embedded, and has its best fused passages
reranked when the knowledge base has a rerank endpoint; both calls' tokens count in the run's budgets
(:mod:`agents.knowledge.usage`). A failing or refused embedding leaves the search to keywords, a failing
or refused rerank leaves the fused order: the search answers in any case.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.urls import reverse

from agents.engine.run_context import RunContext
from agents.engine.tool_context import ToolCallContext
from agents.engine.tools import Citation, Tool, ToolResult
from agents.knowledge.embeddings import Embedded, EmbeddingEndpoint, embed_texts, embedding_endpoint_of
from agents.knowledge.models import KnowledgeBase
from agents.knowledge.rerank import RerankEndpoint, RerankOutcome, rerank_endpoint_of, rerank_texts
from agents.knowledge.search import (
    DEFAULT_LIMIT,
    Found,
    Passage,
    Rerank,
    RerankCall,
    VectorRanking,
    clamped_limit,
    knowledge_search,
    rerank_depth,
    rerank_endpoint_for,
    reranked,
    vector_ranking_for,
)
from agents.knowledge.selectors import documents_not_ready, knowledge_bases_of_connectors
from agents.knowledge.usage import BudgetReached, EmbeddingPayer, embedding_metered, rerank_metered
from agents.knowledge.vector_index import Unavailable, vector_backend
from connectors.adapter_types import CallOutcome
from connectors.knowledge.kind import SEARCH_ACTION, SEARCH_TIMEOUT_SECONDS
from connectors.models import ConnectorAction, ConnectorKind
from connectors.selectors import RunActionsSource, run_connector_actions
from connectors.tools import ConnectorToolResult, tool_description_for, tool_name_for

if TYPE_CHECKING:
    from agents.models import ModelConfig

logger = logging.getLogger(__name__)

PREVIEW_CHARS = 300
NO_PASSAGE = (
    "No passage of this knowledge base matches the query. Try other words, or say you did not find it."
)
NOT_READABLE = "This knowledge base is not available to the user any more."
NOT_READY = (
    "Not searched yet: {names} (still being indexed, or could not be indexed). Say so if the answer may "
    "be in them."
)


class CitationNumbers:
    """The numbers a run's passages are cited by, shared by the run's knowledge-base tools: the first
    passage found is ``[1]``, and a passage found again keeps its number, so the answer's marks stay
    true across searches."""

    def __init__(self) -> None:
        self._numbers: dict[int, int] = {}

    def number(self, chunk_id: int) -> int:
        return self._numbers.setdefault(chunk_id, len(self._numbers) + 1)


@dataclass(frozen=True, slots=True)
class DocumentsScope:
    """A search of some documents of a knowledge base only (a conversation's chat files): each one's id
    and the link its citations open (its attachment's download)."""

    links: Mapping[uuid.UUID, str]


class KnowledgeSearchTool(Tool):
    """One knowledge base's search, bound to one run (to some of its documents with ``scope``)."""

    def __init__(
        self,
        knowledge_base: KnowledgeBase,
        action: ConnectorAction,
        context: RunContext,
        numbers: CitationNumbers,
        scope: DocumentsScope | None = None,
    ) -> None:
        connector = knowledge_base.connector
        self.name = tool_name_for(connector.name, SEARCH_ACTION)
        self.description = tool_description_for(action)
        self.parameters = action.parameters
        self.timeout = SEARCH_TIMEOUT_SECONDS
        self.knowledge_base_id = knowledge_base.pk
        self.kind = knowledge_base.kind
        self.context = context
        self.numbers = numbers
        self.scope = scope

    def _payer(self, organization_id: int) -> EmbeddingPayer:
        """Who the search's model calls are for: the run's organisation, user, agent and run."""
        return EmbeddingPayer(
            organization_id=organization_id,
            user_id=self.context.user_id,
            agent_id=_uuid_or_none(self.context.agent_id),
            run_id=_uuid_or_none(self.context.run_id),
        )

    async def _by_meaning(
        self, organization_id: int, query: str, embedding: EmbeddingSetup | None
    ) -> VectorRanking | None:
        """The query's ranking by meaning, when the knowledge base is embedded and the database searches
        vectors; ``None`` (keyword search alone) otherwise, or when the embedding fails or a budget that
        counts the run is spent (the embedding's tokens count in the run's budgets)."""
        if embedding is None:
            return None
        config, endpoint, dimension = embedding
        embedded = await embedding_metered(
            self._payer(organization_id),
            config,
            [query],
            lambda: embed_texts(endpoint, [query], dimension=dimension),
        )
        if not isinstance(embedded, Embedded):
            logger.info(
                "knowledge search by keyword only: %s",
                type(embedded).__name__,
                extra={"org_id": organization_id, "run_id": self.context.run_id},
            )
            return None
        return vector_ranking_for(embedded.vectors[0])

    def _reranker(self, organization_id: int, rerank: RerankSetup) -> RerankCall:
        """The rerank endpoint's call for :func:`~agents.knowledge.search.reranked`, metered: its tokens
        count in the run's budgets, and a spent one refuses it."""
        config, endpoint = rerank
        payer = self._payer(organization_id)

        async def call(query: str, texts: list[str], top_n: int) -> RerankOutcome | BudgetReached:
            return await rerank_metered(
                payer, config, query, texts, lambda: rerank_texts(endpoint, query, texts, top_n=top_n)
            )

        return call

    async def execute(self, ctx: ToolCallContext, /, **kwargs: Any) -> ToolResult:
        started = time.perf_counter()
        query = str(kwargs.get("query") or "").strip()
        if not query:
            return _error("give a query: the question or keywords to look for", started)
        org_id = self.context.org_id
        if org_id is None:
            return _error(NOT_READABLE, started)
        limit = clamped_limit(kwargs.get("limit") or DEFAULT_LIMIT)
        setup = await sync_to_async(_search_setup)(org_id, self.knowledge_base_id)
        by_meaning = await self._by_meaning(org_id, query, setup.embedding)
        outcome = await sync_to_async(knowledge_search)(
            organization_id=org_id,
            user_id=self.context.user_id,
            knowledge_base_ids=[self.knowledge_base_id],
            query=query,
            limit=limit,
            document_name=str(kwargs.get("document") or ""),
            vector_ranking=by_meaning,
            depth=rerank_depth(limit) if setup.rerank is not None else None,
            documents=None if self.scope is None else list(self.scope.links),
            kinds=(self.kind,),
        )
        if not isinstance(outcome, Found):
            return _error(NOT_READABLE, started)
        if setup.rerank is not None:
            outcome = await reranked(
                outcome, query=query, limit=limit, rerank=self._reranker(org_id, setup.rerank)
            )
            if outcome.rerank == Rerank.FALLBACK:
                logger.info(
                    "knowledge search kept its fused order: %s",
                    outcome.rerank_failure,
                    extra={"org_id": org_id, "run_id": self.context.run_id},
                )
        numbered = [(self.numbers.number(p.chunk_id), p) for p in outcome.passages]
        content = passages_text(numbered) if numbered else NO_PASSAGE
        if self.scope is not None:
            waiting = await sync_to_async(documents_not_ready)(org_id, list(self.scope.links))
            if waiting:
                content += "\n\n" + NOT_READY.format(names=", ".join(waiting))
        call = CallOutcome(
            status="ok",
            content=content,
            row_count=len(outcome.passages),
            latency_ms=(time.perf_counter() - started) * 1000,
            request_bytes=len(query.encode()),
            response_bytes=len(content.encode()),
            retrieved=tuple(_logged(number, p, outcome) for number, p in numbered),
        )
        links = self.scope.links if self.scope is not None else {}
        citations = tuple(
            citation_of(number, p, self.context.org_slug, links.get(p.document_id)) for number, p in numbered
        )
        return ConnectorToolResult(content=content, call=call, citations=citations)


def _uuid_or_none(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value)) if value else None
    except ValueError:
        return None


def passages_text(numbered: Sequence[tuple[int, Passage]]) -> str:
    """What the model reads: each passage with its number and its source, for citations like ``[1]``."""
    return "\n\n".join(f"[{number}] {passage_source(p)}\n{p.text}" for number, p in numbered)


def citation_of(number: int, passage: Passage, org_slug: str, link: str | None = None) -> Citation:
    """The passage as the chat and the entry points show a citation: its document, where in it, a
    preview and the link that opens the document for people who may read it (``link``, else the
    knowledge document's)."""
    location = passage_source(passage).removeprefix(passage.document_name).removeprefix(", ")
    preview = (
        passage.text if len(passage.text) <= PREVIEW_CHARS else passage.text[:PREVIEW_CHARS].rstrip() + "…"
    )
    return Citation(
        number=number,
        title=passage.document_name,
        location=location,
        preview=preview,
        url=link
        or reverse(
            "knowledge-document-file", kwargs={"org_slug": org_slug, "document_id": passage.document_id}
        ),
        source_id=str(passage.document_id),
    )


def passage_source(passage: Passage) -> str:
    """``Purchasing policy.pdf, p. 3, Payments > Large payments``."""
    parts = [passage.document_name]
    if passage.page_start:
        pages = (
            f"p. {passage.page_start}"
            if passage.page_end == passage.page_start
            else f"pp. {passage.page_start}-{passage.page_end}"
        )
        parts.append(pages)
    if passage.heading_path:
        parts.append(" > ".join(passage.heading_path))
    return ", ".join(parts)


def _logged(number: int, passage: Passage, found: Found) -> dict[str, Any]:
    """A passage as the call log keeps it: where it is and how it ranked, never its text. With a rerank
    endpoint: ``rerank`` (``reranked`` or ``fallback``), and the passage's rerank rank and score, or why the
    fused order was kept."""
    entry: dict[str, Any] = {
        "n": number,
        "document_id": str(passage.document_id),
        "document": passage.document_name,
        "chunk_id": passage.chunk_id,
        "page": passage.page_start,
        "score": passage.score,
        "keyword_rank": passage.keyword_rank,
        "vector_rank": passage.vector_rank,
        "mode": found.ranking,
    }
    if found.rerank == Rerank.RERANKED:
        entry.update(
            rerank=found.rerank.value, rerank_rank=passage.rerank_rank, rerank_score=passage.rerank_score
        )
    elif found.rerank == Rerank.FALLBACK:
        entry.update(rerank=found.rerank.value, rerank_failure=found.rerank_failure)
    return entry


def _error(message: str, started: float) -> ToolResult:
    call = CallOutcome(
        status="error", content="", error=message, latency_ms=(time.perf_counter() - started) * 1000
    )
    return ConnectorToolResult(content=f"Error: {message}", is_error=True, error=message, call=call)


EmbeddingSetup = tuple["ModelConfig", EmbeddingEndpoint, int]
RerankSetup = tuple["ModelConfig", RerankEndpoint]


@dataclass(frozen=True, slots=True)
class SearchSetup:
    """The endpoints a search calls (their keys decrypted): the question's embedding, when the knowledge
    base is embedded and the database searches vectors, and the rerank, when it has a rerank endpoint."""

    embedding: EmbeddingSetup | None
    rerank: RerankSetup | None


def _search_setup(organization_id: int, knowledge_base_id: uuid.UUID) -> SearchSetup:
    """The knowledge base's embedding and rerank endpoints, as a search calls them (sync)."""
    rerank = rerank_endpoint_for(organization_id=organization_id, knowledge_base_ids=[knowledge_base_id])
    return SearchSetup(
        embedding=_embedding_setup(organization_id, knowledge_base_id),
        rerank=(rerank, rerank_endpoint_of(rerank)) if rerank is not None else None,
    )


def _embedding_setup(organization_id: int, knowledge_base_id: uuid.UUID) -> EmbeddingSetup | None:
    """The knowledge base's embedding endpoint (its key decrypted) and dimension, when it is embedded and
    the database searches vectors (sync)."""
    knowledge_base = (
        KnowledgeBase.objects.for_org(organization_id)
        .select_related("embedding_endpoint")
        .filter(pk=knowledge_base_id)
        .first()
    )
    if knowledge_base is None or knowledge_base.embedding_dimension is None:
        return None
    config = knowledge_base.embedding_endpoint
    if config is None or not config.active or isinstance(vector_backend(), Unavailable):
        return None
    return config, embedding_endpoint_of(config), knowledge_base.embedding_dimension


def knowledge_tools_for_run(run: RunActionsSource) -> list[Tool]:
    """The run's knowledge-base search tools: its agent's knowledge bases the run's user may read, built
    from the same connector actions as the guard rails' catalogue (sync: one query more)."""
    context = run.context
    if context.org_id is None:
        return []
    actions = {
        action.connector_id: action
        for action in run_connector_actions(run)
        if action.name == SEARCH_ACTION and action.connector.kind == ConnectorKind.KNOWLEDGE
    }
    if not actions:
        return []
    bases = knowledge_bases_of_connectors(
        organization_id=context.org_id, user_id=context.user_id, connector_ids=actions
    )
    numbers = CitationNumbers()
    return [KnowledgeSearchTool(kb, actions[kb.connector_id], context, numbers) for kb in bases]
