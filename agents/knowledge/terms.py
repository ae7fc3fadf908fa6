"""The terms a text is searched by, and the fusion of several rankings into one. Django-free.

:func:`search_terms` is the one tokenizer of keyword search, for what is indexed and for what is asked,
so both sides agree: the text is NFKC-normalised (full-width letters and digits become their ASCII
forms), cut by jieba's search mode (Chinese into words and the shorter words inside long ones, so
``五万元`` also matches ``五万`` and ``万元``; other text into words), lower-cased, and stripped of
punctuation and spaces. Numbers keep their digit groups together (``50,000`` is ``50000``).

:func:`reciprocal_rank_fusion` merges the rankings of keyword and vector search: each item scores
``1 / (k + rank)`` in every ranking it is in (Cormack, Clarke and Büttcher, SIGIR 2009, with their k=60).
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Hashable, Sequence
from typing import TypeVar

import jieba

__all__ = ["RRF_K", "reciprocal_rank_fusion", "search_terms"]

RRF_K = 60

# jieba announces loading its dictionary on its own logger at DEBUG; the platform's logs say nothing
# routine (tests/platform_core/test_quiet_logs.py).
jieba.setLogLevel(logging.WARNING)

_DIGIT_GROUPS = re.compile(r"(?<=\d)[,_](?=\d{3}\b)")
_WORD = re.compile(r"\w", re.UNICODE)

K = TypeVar("K", bound=Hashable)


def search_terms(text: str) -> list[str]:
    """The search terms of ``text``, in order, repeats kept (a term's frequency counts)."""
    normalised = _DIGIT_GROUPS.sub("", unicodedata.normalize("NFKC", text))
    return [term.lower() for term in jieba.lcut_for_search(normalised) if _WORD.search(term)]


def reciprocal_rank_fusion(rankings: Sequence[Sequence[K]], *, k: int = RRF_K) -> list[tuple[K, float]]:
    """The items of ``rankings`` (each best first) by their fused score, best first; an item scores
    ``1 / (k + rank)`` (rank from 1) in each ranking it appears in. Ties keep the order in which the
    items were first seen."""
    scores: dict[K, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda pair: -pair[1])
