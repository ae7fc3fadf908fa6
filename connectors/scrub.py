"""Remove secret values from text before it reaches an outcome, an error message, a log line or storage.

The one implementation of "replace every known secret in this text": :mod:`connectors.redaction` builds
on it for structured values. A target may echo a credential back transformed, so besides the exact text
it finds, in any letter case: the secret reversed, URL-encoded (once or twice), JSON-escaped and in hex;
and, case-sensitively, its base64 (standard or URL-safe, with or without padding) anywhere inside a longer
base64 token, such as HTTP basic auth's ``user:secret``. Secrets shorter than
:data:`~platform_core.secret_rules.MIN_SECRET_LENGTH` are ignored: they are refused when saved, and
replacing a short value would mangle ordinary text and reveal the secret by what was replaced.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import quote, quote_plus

from platform_core.secret_rules import MIN_SECRET_LENGTH

REDACTED = "[redacted]"

# The characters of a base64 token in either alphabet (standard ``+/``, URL-safe ``-_``).
_BASE64_CHAR = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_")


@dataclass(frozen=True)
class SecretMatcher:
    """The compiled patterns of a set of secrets: ``text`` for their textual forms (any case), ``base64``
    for the characters of their base64 that do not depend on neighbouring bytes. False when empty."""

    text: re.Pattern[str] | None = None
    base64: re.Pattern[str] | None = None

    def __bool__(self) -> bool:
        return self.text is not None


def _textual_forms(secret: str) -> set[str]:
    forms = set()
    for value in (secret, secret[::-1]):
        once = quote(value, safe="")
        forms.update(
            {
                value,
                once,
                quote_plus(value),
                quote(once, safe=""),
                json.dumps(value)[1:-1],
                value.encode().hex(),
            }
        )
    return forms


def base64_cores(data: bytes) -> set[str]:
    """The base64 characters (standard alphabet) that encode ``data`` alone, wherever it starts in a longer
    byte string. base64 turns each 3 bytes into 4 characters of 6 bits, so ``data`` starting at an offset of
    0, 1 or 2 modulo 3 gives three different encodings; in each, the characters whose 6 bits all come from
    ``data`` are the same whatever surrounds it. One core per alignment."""
    cores = set()
    for offset in range(3):
        encoded = base64.b64encode(bytes(offset) + data + bytes(3)).decode("ascii")
        first = -(-8 * offset // 6)  # the first character whose bits start inside ``data``
        end = 8 * (offset + len(data)) // 6  # past the last character whose bits end inside it
        cores.add(encoded[first:end])
    return cores


def _base64_forms(secret: str) -> set[str]:
    forms = set()
    for value in {secret, secret.upper(), secret.lower(), secret[::-1]}:
        for core in base64_cores(value.encode()):
            forms.update({core, core.translate(str.maketrans("+/", "-_"))})
    return forms


def _alternation(forms: Iterable[str]) -> str:
    # longest first, so a secret that contains another is replaced whole
    return "|".join(re.escape(form) for form in sorted(set(forms), key=len, reverse=True))


@lru_cache(maxsize=64)
def _matcher(secrets: tuple[str, ...]) -> SecretMatcher:
    usable = [s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH]
    if not usable:
        return SecretMatcher()
    text = set().union(*map(_textual_forms, usable))
    encoded = set().union(*map(_base64_forms, usable))
    return SecretMatcher(
        text=re.compile(_alternation(text), re.IGNORECASE), base64=re.compile(_alternation(encoded))
    )


def secret_variants(secrets: Iterable[str]) -> SecretMatcher:
    """The matcher of every usable secret and its encodings, for :func:`scrub_variants`."""
    return _matcher(tuple(dict.fromkeys(secrets)))


def basic_credentials(username: str, password: str) -> str:
    """The base64 ``user:password`` token of HTTP basic auth (itself a secret)."""
    return base64.b64encode(f"{username}:{password}".encode()).decode("ascii")


def _scrub_base64(text: str, pattern: re.Pattern[str]) -> str:
    """Replace each base64 token holding a secret's core whole (with its padding): the characters around
    the core also carry bits of the secret."""
    parts: list[str] = []
    done = 0
    for match in pattern.finditer(text):
        start, end = match.span()
        if start < done:
            continue
        while start > done and text[start - 1] in _BASE64_CHAR:
            start -= 1
        while end < len(text) and text[end] in _BASE64_CHAR:
            end += 1
        while end < len(text) and text[end] == "=":
            end += 1
        parts += [text[done:start], REDACTED]
        done = end
    if not parts:
        return text
    parts.append(text[done:])
    return "".join(parts)


def scrub_variants(text: str, variants: SecretMatcher) -> str:
    """``text`` with each secret of ``variants`` (from :func:`secret_variants`), in any of its encodings,
    replaced by ``[redacted]``."""
    if not variants or not text:
        return text
    assert variants.text is not None and variants.base64 is not None
    text = _scrub_base64(text, variants.base64)
    return variants.text.sub(REDACTED, text)


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret (and its common encodings) replaced by ``[redacted]``."""
    if not text:
        return text
    return scrub_variants(text, secret_variants(secrets))
