"""The rule every stored secret meets: long enough to be guessed by nobody and redacted safely.

Redaction replaces every occurrence of a secret's value in logs, events and call logs. A one-character
secret would be replaced inside ordinary words (mangling every message) and reveal itself by what was
replaced; a short one is also easy to guess. So connector credentials, model API keys and Feishu app
credentials shorter than :data:`MIN_SECRET_LENGTH` are refused when they are saved, and redaction ignores
shorter values it still meets (saved before this rule).
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

MIN_SECRET_LENGTH = 8


def validate_secret_length(value: str | None) -> None:
    """Refuse a new secret shorter than :data:`MIN_SECRET_LENGTH` (an empty value, "clear it", passes)."""
    if value and len(value) < MIN_SECRET_LENGTH:
        raise ValidationError(
            _(
                "A secret must be at least %(minimum)d characters long: a shorter one is easy to guess "
                "and cannot be redacted safely from logs."
            ),
            code="secret_too_short",
            params={"minimum": MIN_SECRET_LENGTH},
        )
