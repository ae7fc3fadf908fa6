"""The terms a text is searched by, and the fusion of several rankings into one. Django-free.

:func:`search_terms` is the one tokenizer of keyword search, for what is indexed and for what is asked,
so both sides agree: the text is NFKC-normalised (full-width letters and digits become their ASCII
forms), cut by jieba's search mode (Chinese into words and the shorter words inside long ones, so
``五万元`` also matches ``五万`` and ``万元``; other text into words), lower-cased, and stripped of
punctuation and spaces. Numbers keep their digit groups together (``50,000`` is ``50000``). English
words are cut to their stems (Snowball) and the function words of English and Chinese are left out.

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
import snowballstemmer

__all__ = ["RRF_K", "reciprocal_rank_fusion", "search_terms"]

RRF_K = 60

# jieba announces loading its dictionary on its own logger at DEBUG; the platform's logs say nothing
# routine (tests/platform_core/test_quiet_logs.py).
jieba.setLogLevel(logging.WARNING)

_DIGIT_GROUPS = re.compile(r"(?<=\d)[,_](?=\d{3}\b)")
_LATIN = re.compile(r"[a-z]+")
# English words are cut to their stems (Snowball's English stemmer: "suppliers" and "supplier", "checking"
# and "checked" meet), so a question need not use a passage's exact word forms.
_STEMMER = snowballstemmer.stemmer("english")
# Words that say nothing of what a passage is about. PostgreSQL's ranking weighs every matched term alike
# (no inverse document frequency), so leaving them out keeps "what does the policy say" from matching
# every passage that says "the".
_STOP_WORDS = frozenset(
    "a about an and are as at be by can could do does did for from has have how i in is it its me my of on or our "
    "say says should that the their there these this those to was we what when where which who whom why "
    "will with would you your 的 了 是 在 和 与 或 对 有 吗 呢 吧 什么 怎么 哪些 哪个 如何 请 我 我们 你 你们 "
    "他 她 它 这 那 这个 那个 一个 及 等 之 其".split()
)
_WORD = re.compile(r"\w", re.UNICODE)

K = TypeVar("K", bound=Hashable)


def search_terms(text: str) -> list[str]:
    """The search terms of ``text``, in order, repeats kept (a term's frequency counts)."""
    normalised = _DIGIT_GROUPS.sub("", unicodedata.normalize("NFKC", text))
    terms = []
    for piece in jieba.lcut_for_search(normalised):
        term = piece.lower()
        if not _WORD.search(term) or term in _STOP_WORDS:
            continue
        terms.append(_STEMMER.stemWord(term) if _LATIN.fullmatch(term) else term)
    return terms


def reciprocal_rank_fusion(rankings: Sequence[Sequence[K]], *, k: int = RRF_K) -> list[tuple[K, float]]:
    """The items of ``rankings`` (each best first) by their fused score, best first; an item scores
    ``1 / (k + rank)`` (rank from 1) in each ranking it appears in. Ties keep the order in which the
    items were first seen."""
    scores: dict[K, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda pair: -pair[1])
