"""Texts turned into vectors by a model endpoint of role "embedding" (OpenAI-compatible ``POST /embeddings``).

The request goes through the transport of :mod:`agents.knowledge.endpoint_access` (the engine's model
client, as a chat's, behind the SSRF guard with the operator's allowance, the key in its provider's header,
the admin's extra headers and query, the SDK's retries). The endpoint is read from the
:class:`~agents.models.ModelConfig` here rather than through ``agents.runtime``, which this package cannot
import (``agents.models`` imports the knowledge models): :func:`embedding_endpoint_of` maps the same fields
as ``agents.runtime.endpoint_of``.

Texts go in batches (:func:`agents.model_presets.embedding_batch_size`: 64, or fewer where the provider
takes fewer, and at most :data:`MAX_BATCH_CHARS` characters), one after another. The answer is read
strictly: one vector per text, in the texts' order (by ``index``), all of one dimension (the knowledge
base's, when it has one), finite in float32 and not zero; anything else is a ``bad_answer``, never a
vector stored. :func:`embed_texts` never blocks the event loop (it reads no database);
:func:`embed_texts_sync` runs it from sync code (a Celery worker) on an event loop of its own.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import math
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

import numpy as np
from django.utils import translation
from django.utils.translation import gettext as _

from agents.engine.llm import OpenAICompatibleLLM, aclose_shared_clients
from agents.knowledge.endpoint_access import (
    EndpointAccess,
    EndpointSettings,
    PostFailed,
    PostFailure,
    access_settings_of,
    endpoint_post,
    strict_json,
)
from agents.model_presets import embedding_batch_size

__all__ = [
    "MAX_BATCH_CHARS",
    "Embedded",
    "EmbeddingEndpoint",
    "EmbeddingFailed",
    "EmbeddingFailure",
    "EmbeddingOutcome",
    "embed_texts",
    "embed_texts_sync",
    "embedding_endpoint_of",
]

MAX_BATCH_CHARS = 100_000  # OpenAI takes at most 300,000 tokens a request, summed over its inputs
MAX_DIMENSION = 16_000  # pgvector's limit, far above any embedding model's
DECODE_INLINE_BYTES = 64 * 1024  # a larger answer is read in a worker thread


class EmbeddingFailure(StrEnum):
    UNREACHABLE = "unreachable"  # no answer: connection refused or reset, name not found, timeout, 5xx
    REFUSED = "refused"  # a 4xx (the key, the model name...), or the address refused by the SSRF guard
    RATE_LIMITED = "rate_limited"  # 429 after the client's retries
    BAD_ANSWER = "bad_answer"  # an answer that is not one finite vector per text, all of one dimension


@dataclass(frozen=True, slots=True)
class Embedded:
    """One vector per text, in the texts' order; ``tokens`` as the endpoint counted them (0: not said)."""

    vectors: tuple[tuple[float, ...], ...]
    model: str
    dimension: int
    tokens: int
    type: Literal["embedded"] = "embedded"


@dataclass(frozen=True, slots=True)
class EmbeddingFailed:
    """Why no vectors: ``detail`` in the active language for the admin (no key or header value in it),
    ``figures`` the same facts as plain values (to say it again in another language), ``retry_after``
    the seconds a rate-limited endpoint asked to wait, when it said."""

    code: EmbeddingFailure
    detail: str
    figures: Mapping[str, Any] = field(default_factory=dict)
    retry_after: float | None = None
    type: Literal["embedding_failed"] = "embedding_failed"


EmbeddingOutcome = Embedded | EmbeddingFailed


@dataclass(frozen=True)
class EmbeddingEndpoint(EndpointAccess):
    """Where and how to embed, as plain values (the key and header values never in the repr), and how
    many texts a request carries."""

    batch_size: int = 64


def embedding_endpoint_of(config: EndpointSettings) -> EmbeddingEndpoint:
    """The endpoint a model configuration describes (sync: its key and headers are decrypted here)."""
    return EmbeddingEndpoint(
        **access_settings_of(config), batch_size=embedding_batch_size(config.provider, config.model)
    )


def batches(texts: Sequence[str], size: int) -> list[tuple[int, int]]:
    """``(start, end)`` of each request: at most ``size`` texts and :data:`MAX_BATCH_CHARS` characters
    (a longer text goes alone)."""
    found: list[tuple[int, int]] = []
    start, chars = 0, 0
    for index, text in enumerate(texts):
        if index > start and (index - start >= size or chars + len(text) > MAX_BATCH_CHARS):
            found.append((start, index))
            start, chars = index, 0
        chars += len(text)
    if start < len(texts):
        found.append((start, len(texts)))
    return found


async def embed_texts(
    endpoint: EmbeddingEndpoint, texts: Sequence[str], *, dimension: int | None = None
) -> EmbeddingOutcome:
    """The vectors of ``texts`` (none empty: ``ValueError``), or why not. With ``dimension`` (the knowledge
    base's), an answer of another dimension is a ``bad_answer``."""
    if any(not text.strip() for text in texts):
        raise ValueError("an empty text has no embedding")
    if not endpoint.sendable():
        return EmbeddingFailed(
            EmbeddingFailure.REFUSED,
            _(
                "The API key or an extra header holds characters a request header cannot carry (visible "
                "ASCII only): nothing was sent."
            ),
            {"reason": "unsendable_header"},
        )
    if not texts:
        return Embedded(vectors=(), model=endpoint.model, dimension=dimension or 0, tokens=0)
    llm = endpoint.llm()
    vectors: list[tuple[float, ...]] = []
    model, tokens = endpoint.model, 0
    for start, end in batches(texts, max(1, endpoint.batch_size)):
        answered = await _embed_batch(endpoint, llm, list(texts[start:end]), dimension)
        if isinstance(answered, EmbeddingFailed):
            return answered
        batch_vectors, model, batch_tokens = answered
        dimension = len(batch_vectors[0])
        vectors.extend(batch_vectors)
        tokens += batch_tokens
    return Embedded(vectors=tuple(vectors), model=model, dimension=dimension or 0, tokens=tokens)


def embed_texts_sync(
    config: EndpointSettings, texts: Sequence[str], *, dimension: int | None = None
) -> EmbeddingOutcome:
    """:func:`embed_texts` from sync code (a Celery worker), on an event loop of its own in a worker
    thread, its messages in the caller's language; that loop's clients are closed afterwards."""
    endpoint = embedding_endpoint_of(config)
    language = translation.get_language()

    async def run() -> EmbeddingOutcome:
        try:
            with translation.override(language):
                return await embed_texts(endpoint, texts, dimension=dimension)
        finally:
            await aclose_shared_clients()

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="embedding") as pool:
        return pool.submit(asyncio.run, run()).result()


# --- one request ------------------------------------------------------------------------------------------


async def _embed_batch(
    endpoint: EmbeddingEndpoint, llm: OpenAICompatibleLLM, texts: list[str], dimension: int | None
) -> tuple[list[tuple[float, ...]], str, int] | EmbeddingFailed:
    body = {"model": endpoint.model, "input": texts, "encoding_format": "float"}
    content = await endpoint_post(endpoint, llm, "/embeddings", body)
    if isinstance(content, PostFailed):
        return _failure(endpoint, content)
    if len(content) > DECODE_INLINE_BYTES:  # 64 vectors of 1,024 numbers take ~20 ms to read: not on the loop
        return await asyncio.to_thread(_decoded, endpoint, content, len(texts), dimension)
    return _decoded(endpoint, content, len(texts), dimension)


def _failure(endpoint: EmbeddingEndpoint, failed: PostFailed) -> EmbeddingFailed:
    """Why no vectors, in the admin's words, from why the request got no answer."""
    kind, message, status = failed.kind, failed.message, failed.status
    if kind == PostFailure.ADDRESS_REFUSED:
        return EmbeddingFailed(
            EmbeddingFailure.REFUSED,
            _("The embedding endpoint's address is not allowed: %(reason)s") % {"reason": message},
            {"reason": "address_refused"},
        )
    if kind == PostFailure.TIMEOUT:
        return EmbeddingFailed(
            EmbeddingFailure.UNREACHABLE,
            _("The embedding endpoint at %(host)s did not answer within %(seconds)s s.")
            % {"host": failed.host, "seconds": f"{endpoint.timeout:g}"},
            {"host": failed.host, "timeout": endpoint.timeout},
        )
    if kind == PostFailure.CONNECTION:
        return EmbeddingFailed(
            EmbeddingFailure.UNREACHABLE,
            _("The embedding endpoint at %(host)s cannot be reached: %(reason)s")
            % {"host": failed.host, "reason": message},
            {"host": failed.host, "reason": message},
        )
    if kind == PostFailure.RATE_LIMITED:
        return EmbeddingFailed(
            EmbeddingFailure.RATE_LIMITED,
            _("The embedding endpoint is rate limited (HTTP 429): %(message)s") % {"message": message},
            {"status": 429, "message": message},
            retry_after=failed.retry_after,
        )
    if kind == PostFailure.SERVER_ERROR:
        return EmbeddingFailed(
            EmbeddingFailure.UNREACHABLE,
            _("The embedding endpoint failed (HTTP %(status)s): %(message)s")
            % {"status": status, "message": message},
            {"status": status, "message": message},
        )
    return EmbeddingFailed(
        EmbeddingFailure.REFUSED,
        _("The embedding endpoint refused the request (HTTP %(status)s): %(message)s")
        % {"status": status, "message": message},
        {"status": status, "message": message},
    )


# --- reading the answer -----------------------------------------------------------------------------------


class _BadAnswer(Exception):
    def __init__(self, detail: str, **figures: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.figures = figures


def _decoded(
    endpoint: EmbeddingEndpoint, content: bytes, count: int, dimension: int | None
) -> tuple[list[tuple[float, ...]], str, int] | EmbeddingFailed:
    try:
        return _read(content, count, dimension, endpoint.model)
    except _BadAnswer as bad:
        return EmbeddingFailed(EmbeddingFailure.BAD_ANSWER, bad.detail, bad.figures)


def _read(
    content: bytes, count: int, dimension: int | None, model: str
) -> tuple[list[tuple[float, ...]], str, int]:
    try:
        answer = strict_json(content)
    except ValueError as exc:
        raise _BadAnswer(_("The embedding endpoint's answer is not JSON."), reason="not_json") from exc
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise _BadAnswer(_("The embedding endpoint's answer has no list of embeddings."), reason="no_data")
    if len(data) != count:
        raise _BadAnswer(
            _("The embedding endpoint answered %(got)d vectors for %(count)d texts.")
            % {"got": len(data), "count": count},
            reason="count",
            got=len(data),
            count=count,
        )
    ordered = _in_order(data)
    vectors = [_vector(item.get("embedding")) for item in ordered]
    expected = dimension or len(vectors[0])
    for vector in vectors:
        if len(vector) != expected:
            raise _BadAnswer(
                _(
                    "The embedding endpoint answered a vector of %(got)d dimensions where %(expected)d were expected."
                )
                % {"got": len(vector), "expected": expected},
                reason="dimension",
                got=len(vector),
                expected=expected,
            )
    answered_model = answer.get("model")
    usage = answer.get("usage")
    tokens = 0
    if isinstance(usage, dict):
        counted = usage.get("prompt_tokens", usage.get("total_tokens"))
        if isinstance(counted, int) and not isinstance(counted, bool) and counted >= 0:
            tokens = counted
    return vectors, answered_model if isinstance(answered_model, str) and answered_model else model, tokens


def _in_order(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items in the texts' order: by ``index`` when every item has one (each index once), else as
    listed."""
    indexes = [item.get("index") for item in data]
    if all(index is None for index in indexes):
        return data
    if sorted(i if isinstance(i, int) and not isinstance(i, bool) else -1 for i in indexes) != list(
        range(len(data))
    ):
        raise _BadAnswer(
            _("The embedding endpoint's answer does not say which text each vector is for."), reason="index"
        )
    return sorted(data, key=lambda item: int(item["index"]))


def _vector(raw: Any) -> tuple[float, ...]:
    if isinstance(raw, str):  # base64 of float32 little-endian, as OpenAI sends encoding_format "base64"
        try:
            packed = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise _BadAnswer(
                _("The embedding endpoint answered a vector that is not numbers."), reason="not_numbers"
            ) from exc
        if not packed or len(packed) % 4:
            raise _BadAnswer(
                _("The embedding endpoint answered a vector that is not numbers."), reason="not_numbers"
            )
        values = np.frombuffer(packed, dtype="<f4").astype(np.float64)
    elif isinstance(raw, list) and raw and all(type(x) in (int, float) for x in raw):
        values = np.asarray(raw, dtype=np.float64)
    else:
        raise _BadAnswer(
            _("The embedding endpoint answered a vector that is not numbers."), reason="not_numbers"
        )
    if values.shape[0] > MAX_DIMENSION:
        raise _BadAnswer(
            _(
                "The embedding endpoint answered a vector of %(got)d dimensions where %(expected)d were expected."
            )
            % {"got": values.shape[0], "expected": MAX_DIMENSION},
            reason="dimension",
            got=int(values.shape[0]),
            expected=MAX_DIMENSION,
        )
    # Stored as float32: a value beyond float32's range would become infinite there.
    with np.errstate(over="ignore"):
        as_float32 = values.astype(np.float32)
    if not np.isfinite(as_float32).all():
        raise _BadAnswer(
            _("The embedding endpoint answered a vector with values that are not finite."),
            reason="not_finite",
        )
    if not math.fsum(abs(x) for x in values.tolist()):
        raise _BadAnswer(
            _("The embedding endpoint answered a zero vector, which has no direction."), reason="zero"
        )
    return tuple(values.tolist())
