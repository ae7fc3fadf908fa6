"""The base of an organisation's rows that hold :class:`~platform_core.crypto.EncryptedTextField` secrets."""

from __future__ import annotations

import uuid
from typing import ClassVar

from django.db import models

from platform_core.models import OrgOwnedModel


class SecretHoldingModel(OrgOwnedModel):
    """An organisation's row with encrypted secrets, named in ``SECRET_FIELDS``. Its primary key is a UUID
    made in Python, so it is known before the first save (each secret is bound to its row)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)

    SECRET_FIELDS: ClassVar[tuple[str, ...]] = ()

    class Meta:
        abstract = True

    def has_secret(self, field: str) -> bool:
        """Whether a secret is stored, without decrypting it."""
        return bool(self.__dict__.get(field))
