"""Embedding and rerank tokens accounted like a model call's: a usage row (purpose "embedding" or
"rerank", with its cost when the endpoint has prices) and the budgets that count the caller, admitted before
and settled after.

A search's query is embedded, and its passages reranked, for a run's user and agent, so the budgets of the
organisation, that user and that agent count them, and one that is spent refuses the call (the search then
ranks by keyword alone, or keeps its fused order, as :mod:`agents.knowledge.tool` says). A document's
passages are embedded by the worker for the organisation: the organisation's budgets count them, and a spent
budget fails the document with that reason rather than spending past it.

A rerank's tokens are estimated before the call as a cross-encoder reads them: the question once per
passage, and every passage (as DashScope counts a request's tokens). Where the endpoint does not say what it
counted (Cohere bills search units), the estimate is what is settled and recorded, marked estimated.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from asgiref.sync import async_to_sync, sync_to_async
from django.utils import timezone

from agents.engine.completion import Usage
from agents.engine.tokens import estimate_text_tokens
from agents.knowledge.embeddings import Embedded, EmbeddingOutcome
from agents.knowledge.rerank import Reranked, RerankOutcome
from agents.usage.budgets import BudgetLine, budgets_for_run
from agents.usage.counters import Claim, Exceeded, Reserved, budget_counter
from agents.usage.models import CallPurpose, UsageRecord
from agents.usage.pricing import Prices

if TYPE_CHECKING:
    from agents.models import ModelConfig


@dataclass(frozen=True, slots=True)
class BudgetReached:
    """A budget that counts the caller is spent: nothing was sent (embedded or reranked)."""

    budget: str


@dataclass(frozen=True, slots=True)
class EmbeddingPayer:
    """Who an embedding or a rerank is for (the budgets that count it and the usage row's owner)."""

    organization_id: int
    user_id: int | None = None
    agent_id: uuid.UUID | None = None
    run_id: uuid.UUID | None = None


@dataclass(frozen=True, slots=True)
class Counted:
    """What an answered call cost: the tokens the endpoint counted (0: not said) and the model that
    answered."""

    tokens: int
    model: str
    completion_tokens: int = 0  # of ``tokens``, those the model wrote (a chat call's)


T = TypeVar("T")


async def call_metered(
    payer: EmbeddingPayer,
    endpoint: ModelConfig,
    *,
    purpose: CallPurpose,
    estimate: int,
    call: Callable[[], Awaitable[T]],
    counted: Callable[[T], Counted | None],
) -> T | BudgetReached:
    """``call()`` admitted by the payer's budgets (reserving ``estimate`` tokens), its tokens then settled
    into them and, when ``counted`` says the call was answered, recorded as a usage row of ``purpose``."""
    lines = await sync_to_async(budgets_for_run)(
        organization_id=payer.organization_id, user_id=payer.user_id, agent_id=payer.agent_id
    )
    prices = _prices(endpoint)
    reserved = await _reserved(lines, estimate, prices) if lines else None
    if isinstance(reserved, Exceeded):
        return BudgetReached(reserved.line.name)
    answered: Counted | None = None
    try:
        outcome = await call()
        answered = counted(outcome)
    finally:
        # The tokens the endpoint counted, else the estimate; none for a call that got no answer.
        tokens = (answered.tokens or estimate) if answered is not None else 0
        if isinstance(reserved, Reserved):
            cost = prices.cost(_usage(tokens, answered)) if prices else None
            currency = prices.currency if prices else ""
            used = [c.line.units(tokens=tokens, cost=cost, currency=currency) for c in reserved.claims]
            await budget_counter().settle(reserved.claims, used)
    if answered is not None:
        await sync_to_async(_usage_row)(payer, endpoint, purpose, answered, tokens, prices)
    return outcome


async def embedding_metered(
    payer: EmbeddingPayer,
    endpoint: ModelConfig,
    texts: list[str],
    embed: Callable[[], Awaitable[EmbeddingOutcome]],
) -> EmbeddingOutcome | BudgetReached:
    """``embed()`` admitted by the payer's budgets (reserving the texts' estimated tokens), its tokens then
    settled into them and recorded as a usage row."""
    return await call_metered(
        payer,
        endpoint,
        purpose=CallPurpose.EMBEDDING,
        estimate=sum(estimate_text_tokens(text) for text in texts),
        call=embed,
        counted=lambda outcome: (
            Counted(outcome.tokens, outcome.model) if isinstance(outcome, Embedded) else None
        ),
    )


def embedding_metered_sync(
    payer: EmbeddingPayer, endpoint: ModelConfig, texts: list[str], embed: Callable[[], EmbeddingOutcome]
) -> EmbeddingOutcome | BudgetReached:
    """:func:`embedding_metered` for a worker (``embed`` is sync there)."""

    async def run() -> EmbeddingOutcome:
        return await sync_to_async(embed, thread_sensitive=False)()

    return async_to_sync(embedding_metered)(payer, endpoint, texts, run)


def rerank_estimate(query: str, documents: Sequence[str]) -> int:
    """The tokens a rerank reads, as a cross-encoder does: the question with each document."""
    per_query = estimate_text_tokens(query)
    return sum(per_query + estimate_text_tokens(document) for document in documents)


async def rerank_metered(
    payer: EmbeddingPayer,
    endpoint: ModelConfig,
    query: str,
    documents: Sequence[str],
    rerank: Callable[[], Awaitable[RerankOutcome]],
) -> RerankOutcome | BudgetReached:
    """``rerank()`` admitted by the payer's budgets (reserving :func:`rerank_estimate`), its tokens then
    settled into them and recorded as a usage row of purpose "rerank"."""
    return await call_metered(
        payer,
        endpoint,
        purpose=CallPurpose.RERANK,
        estimate=rerank_estimate(query, documents),
        call=rerank,
        counted=lambda outcome: (
            Counted(outcome.tokens, outcome.model) if isinstance(outcome, Reranked) else None
        ),
    )


async def _reserved(lines: list[BudgetLine], estimate: int, prices: Prices | None) -> Reserved | Exceeded:
    most = prices.most_per_token() * estimate if prices is not None else None
    currency = prices.currency if prices is not None else ""
    now = timezone.now()
    claims = [
        Claim(line, line.period_key(now), line.units(tokens=estimate, cost=most, currency=currency))
        for line in lines
    ]
    return await budget_counter().reserve(claims)


def _prices(endpoint: ModelConfig) -> Prices | None:
    return Prices.of(
        input=endpoint.price_input,
        output=endpoint.price_output if endpoint.price_output is not None else endpoint.price_input,
        cached_input=endpoint.price_cached_input,
        currency=endpoint.price_currency,
    )


def _usage(tokens: int, answered: Counted | None) -> Usage:
    written = min(answered.completion_tokens, tokens) if answered is not None else 0
    return Usage(prompt_tokens=tokens - written, completion_tokens=written, total_tokens=tokens)


def _usage_row(
    payer: EmbeddingPayer,
    endpoint: ModelConfig,
    purpose: CallPurpose,
    answered: Counted,
    tokens: int,
    prices: Prices | None,
) -> None:
    usage = _usage(tokens, answered)
    UsageRecord.objects.create(
        organization_id=payer.organization_id,
        user_id=payer.user_id,
        agent_id=payer.agent_id,
        run_id=payer.run_id,
        model_config_id=endpoint.pk,
        model_config_name=endpoint.name[:200],
        purpose=purpose,
        model=(answered.model or endpoint.model)[:200],
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        total_tokens=tokens,
        estimated=not answered.tokens,
        cost=prices.cost(usage) if prices is not None else None,
        currency=prices.currency if prices is not None else "",
    )
