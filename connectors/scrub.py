"""Remove secret values from text before it reaches an outcome, an error message, a log line or storage.

The one implementation of "replace every known secret in this text": :mod:`connectors.redaction` builds
on it for structured values. A target may echo a credential back transformed, so besides the exact text
it finds, in any letter case: the secret reversed, URL-encoded (once or twice), JSON-escaped and in hex;
and, case-sensitively, the base64 of the secret (or of it upper-cased, lower-cased or reversed), standard or
URL-safe, with or without padding, anywhere inside a longer base64 token, such as HTTP basic auth's
``user:secret``; the whole token is replaced. Secrets shorter than
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
_TO_STANDARD = str.maketrans("-_", "+/")


@dataclass(frozen=True)
class SecretMatcher:
    """What to look for, for a set of secrets: ``text_forms`` (the secret, reversed, URL-encoded,
    JSON-escaped) and ``hex_forms``, lower-cased; and ``cores``, the characters of their base64 (standard
    alphabet) that do not depend on neighbouring bytes. Each is first looked for with ``in``, a fast scan,
    the hex and base64 ones only in a text with a long enough run of ASCII characters; only a text that
    holds one is rewritten (most hold none). False when there is no usable secret."""

    text_forms: tuple[str, ...] = ()
    hex_forms: tuple[str, ...] = ()
    cores: tuple[str, ...] = ()
    pattern: re.Pattern[str] | None = None  # every textual and hex form, any case

    def __bool__(self) -> bool:
        return self.pattern is not None


def _textual_forms(secret: str) -> set[str]:
    forms = set()
    for value in (secret, secret[::-1]):
        once = quote(value, safe="")
        forms.update({value, once, quote_plus(value), quote(once, safe=""), json.dumps(value)[1:-1]})
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
    forms: set[str] = set()
    for value in {secret, secret.upper(), secret.lower(), secret[::-1]}:
        forms.update(base64_cores(value.encode()))
    return forms


def _longest_first(forms: Iterable[str]) -> tuple[str, ...]:
    # so a secret that contains another is replaced whole
    return tuple(sorted(set(forms), key=len, reverse=True))


def _alternation(forms: Iterable[str]) -> str:
    return "|".join(re.escape(form) for form in _longest_first(forms))


# A secret's base64 core is at least this long (a secret of the shortest length allowed, worst alignment).
_MIN_CORE = min(len(core) for core in base64_cores(bytes(MIN_SECRET_LENGTH)))
# Below this length a text is split into words to see whether it could hold a base64 core or a hex form;
# above it, looking for each (C's substring search) costs less than splitting.
_SPLIT_BELOW = 512


def _has_word_of(text: str, length: int) -> bool:
    """Whether ``text`` may hold a run of ``length`` ASCII characters without white space (a cheap test
    that never misses one: dropping the other characters can only join runs)."""
    if len(text) < length:
        return False
    if len(text) >= _SPLIT_BELOW:
        return True
    return any(len(word) >= length for word in text.encode("ascii", "ignore").split())


@lru_cache(maxsize=64)
def _matcher(secrets: tuple[str, ...]) -> SecretMatcher:
    usable = [s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH]
    if not usable:
        return SecretMatcher()
    text = {form.lower() for form in set().union(*map(_textual_forms, usable))}
    hexed = {value.encode().hex() for secret in usable for value in (secret, secret[::-1])} - text
    cores = _longest_first(set().union(*map(_base64_forms, usable)))
    return SecretMatcher(
        text_forms=_longest_first(text),
        hex_forms=_longest_first(hexed),
        cores=cores,
        pattern=re.compile(_alternation(text | hexed), re.IGNORECASE),
    )


def secret_variants(secrets: Iterable[str]) -> SecretMatcher:
    """The matcher of every usable secret and its encodings, for :func:`scrub_variants`."""
    return _matcher(tuple(dict.fromkeys(secrets)))


def basic_credentials(username: str, password: str) -> str:
    """The base64 ``user:password`` token of HTTP basic auth (itself a secret)."""
    return base64.b64encode(f"{username}:{password}".encode()).decode("ascii")


def _scrub_base64(text: str, cores: tuple[str, ...]) -> str:
    """Replace each base64 token holding a secret's core whole (with its padding): the characters around
    the core also carry bits of the secret. URL-safe base64 is looked for in the standard alphabet."""
    if not _has_word_of(text, _MIN_CORE):  # most texts (prose, a streamed answer's pieces) have none
        return text
    standard = text.translate(_TO_STANDARD) if "-" in text or "_" in text else text
    found = [core for core in cores if core in standard]
    if not found:
        return text
    parts: list[str] = []
    done = 0
    for match in re.finditer(_alternation(found), standard):
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
    parts.append(text[done:])
    return "".join(parts)


def _holds_text_form(text: str, matcher: SecretMatcher) -> bool:
    lowered = text.lower()
    if any(form in lowered for form in matcher.text_forms):
        return True
    hexed = matcher.hex_forms
    return bool(hexed) and _has_word_of(text, len(hexed[-1])) and any(form in lowered for form in hexed)


def scrub_variants(text: str, variants: SecretMatcher) -> str:
    """``text`` with each secret of ``variants`` (from :func:`secret_variants`), in any of its encodings,
    replaced by ``[redacted]``."""
    if not variants or not text:
        return text
    text = _scrub_base64(text, variants.cores)
    if variants.pattern is not None and _holds_text_form(text, variants):
        text = variants.pattern.sub(REDACTED, text)
    return text


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret (and its common encodings) replaced by ``[redacted]``."""
    if not text:
        return text
    return scrub_variants(text, secret_variants(secrets))
