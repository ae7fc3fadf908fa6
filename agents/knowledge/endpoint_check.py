""" "Check endpoint" for the endpoints that never chat: an embedding endpoint embeds a short text, a rerank
endpoint orders two passages for a question. Each is one real request through the SSRF guard, without
retries, whose outcome is the check's one probe (``embedding`` or ``rerank``); such an endpoint has no
chat abilities to decide, so the report has none.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import Any

from django.utils import timezone
from django.utils.translation import gettext as _

from agents.endpoint_check_report import EndpointCheckReport, ProbeOutcome
from agents.knowledge.embeddings import Embedded, EmbeddingEndpoint, embed_texts
from agents.knowledge.rerank import RerankEndpoint, RerankFailed, RerankFailure, rerank_texts

__all__ = ["EMBEDDING_PROBE", "RERANK_PROBE", "check_embedding", "check_rerank"]

EMBEDDING_PROBE = "embedding"
RERANK_PROBE = "rerank"
# A text of both languages the platform searches.
SAMPLE_TEXT = "Purchase orders over 50,000 CNY need the finance director's approval. 超过五万元的采购订单需要财务总监审批。"
RERANK_QUESTION = "Who approves large purchase orders?"
RERANK_PASSAGES = (
    "The office is closed on public holidays.",
    "Purchase orders over 50,000 CNY need the finance director's approval.",
)


async def check_embedding(endpoint: EmbeddingEndpoint) -> EndpointCheckReport:
    """Embed :data:`SAMPLE_TEXT` once: the endpoint works when it answers one vector."""
    started = time.monotonic()
    outcome = await embed_texts(dataclasses.replace(endpoint, max_retries=0), [SAMPLE_TEXT])
    if isinstance(outcome, Embedded):
        probe = ProbeOutcome(
            EMBEDDING_PROBE,
            "works",
            _("It answered a vector of %(dimension)s numbers (model %(model)s).")
            % {"dimension": outcome.dimension, "model": outcome.model},
        )
        return _report(started, probe, key_verified=True)
    probe = ProbeOutcome(EMBEDDING_PROBE, "refused", outcome.detail)
    guarded = outcome.figures.get("reason") == "address_refused"
    return _report(started, probe, key_verified=_key(outcome.figures), refused_by_guard=guarded)


async def check_rerank(endpoint: RerankEndpoint) -> EndpointCheckReport:
    """Rerank :data:`RERANK_PASSAGES` for :data:`RERANK_QUESTION`: the endpoint works when it answers a
    score for each; the message says whether it put the passage that answers first."""
    started = time.monotonic()
    outcome = await rerank_texts(endpoint, RERANK_QUESTION, RERANK_PASSAGES, top_n=len(RERANK_PASSAGES))
    if isinstance(outcome, RerankFailed):
        probe = ProbeOutcome(RERANK_PROBE, "refused", _rerank_failure(outcome))
        guarded = outcome.figures.get("reason") == "address_refused"
        return _report(started, probe, key_verified=_key(outcome.figures), refused_by_guard=guarded)
    best, score = outcome.order[0]
    message = (
        _("It put the passage that answers the question first (score %(score).3f, model %(model)s).")
        if best == 1
        else _(
            "It answered, but put the passage that does not answer the question first: check the model "
            "name (model %(model)s, score %(score).3f)."
        )
    )
    probe = ProbeOutcome(RERANK_PROBE, "works", message % {"score": score, "model": outcome.model})
    return _report(started, probe, key_verified=True)


def _report(
    started: float, probe: ProbeOutcome, *, key_verified: bool | None, refused_by_guard: bool = False
) -> EndpointCheckReport:
    return EndpointCheckReport(
        checked_at=timezone.now(),
        elapsed=time.monotonic() - started,
        probes=(probe,),
        abilities={},
        key_verified=key_verified,
        refused_by_guard=probe.message if refused_by_guard else "",
    )


def _key(figures: Mapping[str, Any]) -> bool | None:
    """Whether the key was refused (401, 403: ``False``); ``None`` when the failure cannot tell."""
    return False if figures.get("status") in (401, 403) else None


def _rerank_failure(failed: RerankFailed) -> str:
    """Why a rerank got no order, in the admin's words (the provider's own message when it gave one)."""
    figures = failed.figures
    said = str(figures.get("message") or "")
    if failed.code == RerankFailure.REFUSED and figures.get("reason") == "address_refused":
        return _("The endpoint's address is not allowed: %(reason)s") % {"reason": said}
    if failed.code == RerankFailure.REFUSED:
        return _("The endpoint refused the request (HTTP %(status)s): %(message)s") % {
            "status": figures.get("status", "?"),
            "message": said or _("no reason given"),
        }
    if failed.code == RerankFailure.RATE_LIMITED:
        return _("The endpoint is rate limiting requests (HTTP 429): try again later.")
    if failed.code == RerankFailure.BAD_ANSWER:
        return _("The endpoint answered, but not with one score per passage (%(reason)s).") % {
            "reason": figures.get("reason", "")
        }
    return _("The endpoint did not answer (%(reason)s on %(host)s).") % {
        "reason": figures.get("reason", ""),
        "host": figures.get("host", ""),
    }
