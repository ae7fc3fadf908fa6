"""Remove secret values from text before it reaches an outcome, an error message or a log line."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

REDACTED = "[redacted]"


def secret_variants(secrets: Iterable[str]) -> tuple[str, ...]:
    """Each secret with the encodings it may come back in (URL-quoted, JSON-escaped), longest first."""
    variants: set[str] = set()
    for secret in secrets:
        if not secret:
            continue
        variants.update({secret, quote(secret, safe=""), quote_plus(secret), json.dumps(secret)[1:-1]})
    return tuple(sorted(variants, key=len, reverse=True))


def basic_credentials(username: str, password: str) -> str:
    """The base64 ``user:password`` token of HTTP basic auth (itself a secret)."""
    return base64.b64encode(f"{username}:{password}".encode()).decode("ascii")


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret (and its common encodings) replaced by ``[redacted]``."""
    if not text:
        return text
    for variant in secret_variants(secrets):
        if variant in text:
            text = text.replace(variant, REDACTED)
    return text
