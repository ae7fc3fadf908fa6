"""Which of a person's memories reach a run's system prompt: all of them while they fit, else the most
relevant to the question first, then the most recent, within :data:`~agents.memory.limits.PROMPT_TOKENS`.

Relevance is the knowledge bases' keyword ranking applied to one person's memories: the same search terms
(:func:`agents.knowledge.terms.search_terms`: Chinese segmented, English stemmed, stop words dropped),
weighted by BM25 over that person's memories. A person's memories are few enough (at most
:data:`~agents.memory.limits.MAX_MEMORIES_PER_USER`) to rank in the process; ``benchmarks/memory_recall.py``
measures it at 1k and 10k memories.
"""

from __future__ import annotations

import math
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from agents.engine.tokens import estimate_text_tokens
from agents.knowledge.terms import search_terms
from agents.memory.limits import MAX_RECALLED, PROMPT_TOKENS
from agents.memory.models import Memory
from platform_core.models import Membership

__all__ = ["Recalled", "RecalledMemory", "memories_rank", "memory_recall"]

BM25_K1 = 1.2
BM25_B = 0.75


@dataclass(frozen=True, slots=True)
class RecalledMemory:
    id: uuid.UUID
    text: str
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class Recalled:
    """The memories given to a run, in the order the prompt lists them, and how many the person has."""

    memories: tuple[RecalledMemory, ...]
    kept: int

    @property
    def ids(self) -> list[uuid.UUID]:
        return [memory.id for memory in self.memories]


@dataclass(frozen=True, slots=True)
class _Row:
    id: uuid.UUID
    text: str
    terms: tuple[str, ...]
    updated_at: datetime


def memories_rank(query: str, rows: Sequence[tuple[uuid.UUID, str, str, datetime]]) -> list[int]:
    """The indexes of ``rows`` (id, text, terms, updated at; newest first) by BM25 score of ``query``'s
    terms, best first; rows without any of them are left out."""
    wanted = set(search_terms(query))
    if not wanted or not rows:
        return []
    documents = [row[2].split() for row in rows]
    average = sum(len(terms) for terms in documents) / len(documents) or 1.0
    frequencies = Counter(term for terms in documents for term in set(terms) if term in wanted)
    weights = {
        term: math.log(1 + (len(documents) - df + 0.5) / (df + 0.5)) for term, df in frequencies.items()
    }
    scored: list[tuple[float, int]] = []
    for index, terms in enumerate(documents):
        counts = Counter(term for term in terms if term in weights)
        if not counts:
            continue
        norm = BM25_K1 * (1 - BM25_B + BM25_B * len(terms) / average)
        score = sum(weights[term] * count * (BM25_K1 + 1) / (count + norm) for term, count in counts.items())
        scored.append((score, index))
    scored.sort(key=lambda pair: (-pair[0], pair[1]))  # ties: the newer first
    return [index for _score, index in scored]


def memory_recall(
    *,
    organization_id: int,
    user_id: int,
    query: str,
    budget_tokens: int = PROMPT_TOKENS,
    mark: bool = True,
) -> Recalled:
    """The memories of ``user_id`` in the organisation for a run asked ``query``: those that fit the
    budget, the relevant first (sync: one read, and with ``mark`` one write marking them given to a
    model). A person who is no longer a member of the organisation is given none."""
    if not Membership.objects.filter(organization_id=organization_id, user_id=user_id).exists():
        return Recalled(memories=(), kept=0)
    rows = list(
        Memory.objects.for_org(organization_id)
        .filter(user_id=user_id)
        .order_by("-updated_at", "-created_at")
        .values_list("id", "text", "terms", "updated_at")
    )
    if not rows:
        return Recalled(memories=(), kept=0)
    order = memories_rank(query, rows)
    ranked = set(order)
    order += [index for index in range(len(rows)) if index not in ranked]
    chosen: list[RecalledMemory] = []
    spent = 0
    for index in order:
        memory_id, text, _terms, updated_at = rows[index]
        cost = estimate_text_tokens(text) + 2  # the list's "- " and line break
        if spent + cost > budget_tokens:
            continue
        chosen.append(RecalledMemory(id=memory_id, text=text, updated_at=updated_at))
        spent += cost
        if len(chosen) == MAX_RECALLED:
            break
    if chosen and mark:
        Memory.objects.for_org(organization_id).filter(pk__in=[m.id for m in chosen]).update(
            recalled_at=timezone.now()
        )
    return Recalled(memories=tuple(chosen), kept=len(rows))
