"""Redaction of secrets from call logs, events and error messages, into a form every database stores.

Two rules, both applied: a value whose key looks secret (password, token, api_key, authorization, ...)
is replaced whole, and every occurrence of a known secret value (the connector's credentials) inside any
string is replaced, wherever it appears and in its common encodings (:mod:`connectors.scrub`, whose
:func:`~connectors.scrub.scrub` is the one function for plain text). The result is also storable: a value a
JSON column refuses (NaN, NUL, a lone surrogate, an object that is not JSON) is given the readable form of
:func:`agents.engine.strict_json.json_safe`, so redacting never makes a record impossible to write.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from agents.engine.strict_json import MAX_STORED_DEPTH, json_safe, key_safe, text_safe
from connectors.scrub import REDACTED, SecretMatcher, scrub_variants, secret_variants

# Matched against the key lowercased with "-" and spaces turned into "_".
SECRET_KEY_PATTERN = re.compile(
    r"(passw(or)?d|^pass$|_pass$|^pwd$|_pwd$|secret|token|api_?key|apikey|authori[sz]ation|^auth$|"
    r"cookie|session_?id|credential|private_?key|access_?key|signature|^dsn$|_dsn$|connection_string)"
)

__all__ = [
    "REDACTED",
    "SECRET_KEY_PATTERN",
    "is_secret_key",
    "redact",
    "redact_values",
    "scrub_value",
]


def is_secret_key(key: object) -> bool:
    """Whether a mapping key names a secret."""
    if not isinstance(key, str):
        return False
    normalised = re.sub(r"[-\s]+", "_", key.strip().lower())
    return bool(SECRET_KEY_PATTERN.search(normalised))


def redact(value: Any, secrets: Iterable[str] = ()) -> Any:
    """A storable copy of ``value`` (JSON-like data) with secret-looking keys and known secret values
    redacted."""
    return _redact(value, secret_variants(secrets), True, 0)


def redact_values(value: Any, secrets: Iterable[str] = ()) -> Any:
    """A storable copy of ``value`` with known secret values redacted, keys left alone (for data whose
    keys are the platform's own, like a run's events and checkpoints: ``prompt_tokens`` is no secret)."""
    return scrub_value(value, secret_variants(secrets))


def scrub_value(value: Any, variants: SecretMatcher) -> Any:
    """:func:`redact_values` with the secrets' variants already computed
    (:func:`connectors.scrub.secret_variants`), for a caller that redacts many values with the same ones."""
    if not variants:
        return json_safe(value)
    return _redact(value, variants, False, 0)


def _redact(value: Any, variants: SecretMatcher, by_key: bool, depth: int) -> Any:
    if isinstance(value, str):
        return text_safe(scrub_variants(value, variants) if variants else value)
    if isinstance(value, Mapping | list | tuple):
        if depth >= MAX_STORED_DEPTH:
            return "<nested too deeply>"
        if isinstance(value, Mapping):
            return {
                key_safe(k): REDACTED
                if by_key and is_secret_key(k)
                else _redact(v, variants, by_key, depth + 1)
                for k, v in value.items()
            }
        return [_redact(v, variants, by_key, depth + 1) for v in value]
    return json_safe(value)
