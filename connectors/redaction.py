"""Redaction of secrets from call logs, events and error messages.

Two rules, both applied: a value whose key looks secret (password, token, api_key, authorization, ...)
is replaced whole, and every occurrence of a known secret value (the connector's credentials) inside any
string is replaced, wherever it appears.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from connectors.scrub import secret_variants

REDACTED = "[redacted]"
# Matched against the key lowercased with "-" and spaces turned into "_".
SECRET_KEY_PATTERN = re.compile(
    r"(passw(or)?d|^pass$|_pass$|^pwd$|_pwd$|secret|token|api_?key|apikey|authori[sz]ation|^auth$|"
    r"cookie|session_?id|credential|private_?key|access_?key|signature|^dsn$|_dsn$|connection_string)"
)
# Secrets shorter than this are not searched for inside other strings (too many false hits).
_MIN_SECRET_LENGTH = 4


def is_secret_key(key: object) -> bool:
    """Whether a mapping key names a secret."""
    if not isinstance(key, str):
        return False
    normalised = re.sub(r"[-\s]+", "_", key.strip().lower())
    return bool(SECRET_KEY_PATTERN.search(normalised))


def _usable(secrets: Iterable[str]) -> tuple[str, ...]:
    # Each secret with the encodings it may come back in, longest first so a secret that contains
    # another is replaced whole.
    return secret_variants(s for s in secrets if s and len(s) >= _MIN_SECRET_LENGTH)


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every known secret value replaced by ``[redacted]``."""
    for secret in _usable(secrets):
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def redact(value: Any, secrets: Iterable[str] = ()) -> Any:
    """A copy of ``value`` (JSON-like data) with secret-looking keys and known secret values redacted."""
    return _redact(value, _usable(secrets))


def _redact(value: Any, secrets: tuple[str, ...]) -> Any:
    if isinstance(value, Mapping):
        return {k: REDACTED if is_secret_key(k) else _redact(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redact(v, secrets) for v in value]
    if isinstance(value, str):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value
    return value
