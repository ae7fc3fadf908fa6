"""The API's inputs and flags for a row's encrypted secrets (connectors, Feishu channels): a secret is
written, never read back; a response says only whether one is stored."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rest_framework import serializers

from platform_core.secret_rules import validate_secret_length


def secret_input(
    *, validator: Callable[[Any], None] = validate_secret_length, **kwargs: Any
) -> serializers.CharField:
    """A write-only secret input: omitted keeps the stored value, ``""`` clears it."""
    return serializers.CharField(
        write_only=True, required=False, allow_blank=True, validators=[validator], **kwargs
    )


class SecretStoredField(serializers.BooleanField):
    """Read-only: whether the row (a :class:`~platform_core.secret_rows.SecretHoldingModel`) stores the
    secret ``secret``, told without decrypting it."""

    def __init__(self, secret: str, **kwargs: Any) -> None:
        self.secret = secret
        super().__init__(read_only=True, source="*", **kwargs)

    def to_representation(self, value: Any) -> bool:
        return bool(value.has_secret(self.secret))
