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
SCAN_FACTOR = 4  # at most MAX_RECALLED * SCAN_FACTOR memories are weighed against the budget
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


def memories_rank(query: str, terms: Sequence[str]) -> list[int]:
    """The indexes of ``terms`` (each memory's search terms, space-separated; newest first) by the BM25
    score of ``query``'s terms, best first; memories without any of them are left out."""
    wanted = set(search_terms(query))
    if not wanted or not terms:
        return []
    lengths = [text.count(" ") + 1 if text else 0 for text in terms]
    average = sum(lengths) / len(terms) or 1.0
    # Only the memories that may hold a wanted term are split (a substring test, then the exact one).
    holding: dict[int, Counter[str]] = {}
    for index, text in enumerate(terms):
        if any(term in text for term in wanted):
            counts = Counter(term for term in text.split() if term in wanted)
            if counts:
                holding[index] = counts
    frequencies = Counter(term for counts in holding.values() for term in counts)
    weights = {term: math.log(1 + (len(terms) - df + 0.5) / (df + 0.5)) for term, df in frequencies.items()}
    scored: list[tuple[float, int]] = []
    for index, counts in holding.items():
        norm = BM25_K1 * (1 - BM25_B + BM25_B * lengths[index] / average)
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
    budget, the relevant first (sync: two reads, and with ``mark`` one write marking them given to a
    model). A person who is no longer a member of the organisation is given none."""
    if not Membership.objects.filter(organization_id=organization_id, user_id=user_id).exists():
        return Recalled(memories=(), kept=0)
    mine = Memory.objects.for_org(organization_id).filter(user_id=user_id)
    # The ranking reads every memory's terms; the texts are read for the candidates only.
    rows = list(mine.order_by("-updated_at", "-created_at").values_list("id", "terms"))
    if not rows:
        return Recalled(memories=(), kept=0)
    order = memories_rank(query, [terms for _id, terms in rows])
    ranked = set(order)
    order += [index for index in range(len(rows)) if index not in ranked][: MAX_RECALLED * SCAN_FACTOR]
    candidates = [rows[index][0] for index in order[: MAX_RECALLED * SCAN_FACTOR]]
    texts = {
        memory_id: (text, updated_at)
        for memory_id, text, updated_at in mine.filter(pk__in=candidates).values_list(
            "id", "text", "updated_at"
        )
    }
    chosen: list[RecalledMemory] = []
    spent = 0
    # Each memory that does not fit is passed over for a shorter one after it, but only so many: with
    # thousands of memories the budget is full long before they have all been weighed.
    for memory_id in candidates:
        if memory_id not in texts:  # deleted meanwhile
            continue
        text, updated_at = texts[memory_id]
        cost = estimate_text_tokens(text) + 2  # the list's "- " and line break
        if spent + cost > budget_tokens:
            continue
        chosen.append(RecalledMemory(id=memory_id, text=text, updated_at=updated_at))
        spent += cost
        if len(chosen) == MAX_RECALLED or spent >= budget_tokens - 4:
            break
    if chosen and mark:
        Memory.objects.for_org(organization_id).filter(pk__in=[m.id for m in chosen]).update(
            recalled_at=timezone.now()
        )
    return Recalled(memories=tuple(chosen), kept=len(rows))
