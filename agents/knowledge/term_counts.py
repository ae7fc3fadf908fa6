"""The document frequencies of keyword search: for each document, how many of its passages hold each of
their search terms (:class:`agents.knowledge.models.DocumentTerm`), replaced with the passages."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from agents.knowledge.models import MAX_COUNTED_TERM, Document, DocumentTerm

__all__ = ["document_terms_replace", "passage_term_counts"]


def passage_term_counts(passage_terms: Iterable[str]) -> Counter[str]:
    """How many passages hold each term, from each passage's space-separated search terms (a term
    counts once per passage however often it appears there; terms longer than ``MAX_COUNTED_TERM`` are
    not counted)."""
    counts: Counter[str] = Counter()
    for terms in passage_terms:
        counts.update({term for term in terms.split() if len(term) <= MAX_COUNTED_TERM})
    return counts


def document_terms_replace(*, document: Document, passage_terms: Iterable[str]) -> None:
    """Make ``document``'s term counts those of the passages given (call it in the transaction that
    writes the passages)."""
    DocumentTerm.objects.for_org(document.organization_id).filter(document_id=document.pk).delete()
    DocumentTerm.objects.bulk_create(
        [
            DocumentTerm(
                organization_id=document.organization_id,
                knowledge_base_id=document.knowledge_base_id,
                document_id=document.pk,
                term=term,
                passages=passages,
            )
            for term, passages in sorted(passage_term_counts(passage_terms).items())
        ],
        batch_size=1000,
    )
