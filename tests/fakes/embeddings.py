"""The fake embedding model of the scripted OpenAI-compatible server (``POST …/embeddings``).

:func:`fake_embedding` turns a text into a deterministic unit vector: a hashed bag of its features
(lower-cased Latin words and digits, and each Chinese character and pair of characters), each feature adding
±1 to the coordinate its BLAKE2 hash picks. Texts sharing words or characters are close (cosine similarity
near the share of their features), unrelated ones near 0, the same text always the same vector, in any
process. :func:`embeddings_answer` is the OpenAI-shaped answer for a request body, which tests can alter
to script a bad answer (``malformed(json.dumps(...).encode())``).
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import struct
from typing import Any

DEFAULT_DIMENSION = 64

_LATIN = re.compile(r"[a-z0-9]+")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


def features(text: str) -> list[str]:
    """The text's features: Latin words and digit runs, Chinese characters and character pairs."""
    lowered = text.lower()
    found = _LATIN.findall(lowered)
    for run in _HAN.findall(lowered):
        found.extend(run)
        found.extend(run[i : i + 2] for i in range(len(run) - 1))
    return found


def fake_embedding(text: str, dimension: int = DEFAULT_DIMENSION) -> list[float]:
    """The unit vector of ``text`` (a featureless text gets the first axis)."""
    vector = [0.0] * dimension
    for feature in features(text):
        digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
        index = int.from_bytes(digest[:4], "little") % dimension
        vector[index] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vector))
    if not norm:
        return [1.0] + [0.0] * (dimension - 1)
    return [x / norm for x in vector]


def inputs_of(body: dict[str, Any]) -> list[str]:
    """The texts of an embeddings request (``input``: one string or a list of them)."""
    given = body.get("input")
    if isinstance(given, str):
        return [given]
    if isinstance(given, list) and all(isinstance(item, str) for item in given):
        return list(given)
    raise ValueError("input must be a string or a list of strings")


def embeddings_answer(body: dict[str, Any], dimension: int = DEFAULT_DIMENSION) -> dict[str, Any]:
    """OpenAI's answer to ``body``: one embedding per input, as floats or (``encoding_format`` "base64")
    float32 little-endian in base64, and a usage count of about a token per four characters."""
    texts = inputs_of(body)
    as_base64 = body.get("encoding_format") == "base64"
    data = []
    for index, text in enumerate(texts):
        vector = fake_embedding(text, dimension)
        embedding: Any = vector
        if as_base64:
            embedding = base64.b64encode(struct.pack(f"<{dimension}f", *vector)).decode()
        data.append({"object": "embedding", "index": index, "embedding": embedding})
    tokens = sum(max(1, len(text) // 4) for text in texts)
    return {
        "object": "list",
        "data": data,
        "model": body.get("model", "scripted-embedding"),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
