"""Remove secret values from text before it reaches an outcome, an error message, a log line or storage.

The one implementation of "replace every known secret in this text": :mod:`connectors.redaction` builds
on it for structured values. Secrets shorter than
:data:`~platform_core.secret_rules.MIN_SECRET_LENGTH` are ignored: they are refused when saved, and
replacing a short value would mangle ordinary text and reveal the secret by what was replaced.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

from platform_core.secret_rules import MIN_SECRET_LENGTH

REDACTED = "[redacted]"


def secret_variants(secrets: Iterable[str]) -> tuple[str, ...]:
    """Each usable secret with the encodings it may come back in (URL-quoted, JSON-escaped), longest
    first, so a secret that contains another is replaced whole."""
    variants: set[str] = set()
    for secret in secrets:
        if not secret or len(secret) < MIN_SECRET_LENGTH:
            continue
        variants.update({secret, quote(secret, safe=""), quote_plus(secret), json.dumps(secret)[1:-1]})
    return tuple(sorted(variants, key=len, reverse=True))


def basic_credentials(username: str, password: str) -> str:
    """The base64 ``user:password`` token of HTTP basic auth (itself a secret)."""
    return base64.b64encode(f"{username}:{password}".encode()).decode("ascii")


def scrub_variants(text: str, variants: tuple[str, ...]) -> str:
    """``text`` with each of ``variants`` (from :func:`secret_variants`) replaced by ``[redacted]``."""
    for variant in variants:
        if variant in text:
            text = text.replace(variant, REDACTED)
    return text


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret (and its common encodings) replaced by ``[redacted]``."""
    if not text:
        return text
    return scrub_variants(text, secret_variants(secrets))
