"""Field encryption: secrets at rest, bound to the row and field they belong to.

- Keys come from ``settings.FIELD_ENCRYPTION_KEYS`` (a list of Fernet keys, never derived from
  ``SECRET_KEY``). The first key encrypts; every key decrypts, so keys rotate by putting a new key first
  and running ``manage.py rotate_encryption_keys``, then dropping the old key.
- The encrypted payload carries its :class:`SecretBinding` (model label, organisation id, row id, field
  name) next to the value, and decryption checks it: a ciphertext copied into another row, another
  organisation's row or another field does not decrypt there.
- :class:`EncryptedTextField` is a model field whose column holds only the token. Reading the attribute
  decrypts it (once, cached); assigning a string stores plaintext in memory that is encrypted on save.
  The row's primary key must be known before the first save (use a UUID primary key generated in Python).
  Every concrete model with such a field is found by :func:`encrypted_fields`, so the rotation command
  covers later apps without registration.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.apps import apps
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models
from django.db.models.query_utils import DeferredAttribute

_PAYLOAD_VERSION = 1


class SecretDecryptError(Exception):
    """A token that no configured key opens, or one that belongs to another row or field."""


@dataclass(frozen=True, slots=True)
class SecretBinding:
    """Where a secret lives. Part of the encrypted payload, checked on decryption."""

    model: str  # "connectors.connector"
    org_id: str  # "" for data that belongs to no organisation
    row_id: str
    field: str

    def as_list(self) -> list[str]:
        return [self.model, self.org_id, self.row_id, self.field]


@lru_cache(maxsize=4)
def _multi_fernet(keys: tuple[str, ...]) -> MultiFernet:
    if not keys:
        raise ImproperlyConfigured("FIELD_ENCRYPTION_KEYS is empty: at least one Fernet key is required")
    try:
        return MultiFernet([Fernet(k.encode() if isinstance(k, str) else k) for k in keys])
    except (ValueError, TypeError) as exc:
        raise ImproperlyConfigured(
            "FIELD_ENCRYPTION_KEYS must be url-safe base64 Fernet keys (32 bytes each)"
        ) from exc


def _keys() -> MultiFernet:
    return _multi_fernet(tuple(settings.FIELD_ENCRYPTION_KEYS))


def primary_fernet() -> Fernet:
    """The key that encrypts (the first of ``FIELD_ENCRYPTION_KEYS``)."""
    keys = tuple(settings.FIELD_ENCRYPTION_KEYS)
    _multi_fernet(keys)  # validates the whole list
    return Fernet(keys[0].encode())


def encrypt_str(plaintext: str, *, binding: SecretBinding) -> str:
    """Encrypt ``plaintext`` with the first key; the token only decrypts under the same ``binding``."""
    payload = json.dumps({"v": _PAYLOAD_VERSION, "b": binding.as_list(), "d": plaintext}, ensure_ascii=False)
    return primary_fernet().encrypt(payload.encode()).decode()


def decrypt_str(token: str, *, binding: SecretBinding) -> str:
    """Decrypt a token made by :func:`encrypt_str` for exactly this ``binding``."""
    try:
        raw = _keys().decrypt(token.encode())
    except InvalidToken as exc:
        raise SecretDecryptError("no configured encryption key opens this value") from exc
    try:
        payload = json.loads(raw)
        bound, value = payload["b"], payload["d"]
    except (ValueError, KeyError, TypeError) as exc:
        raise SecretDecryptError("the encrypted value is malformed") from exc
    if bound != binding.as_list() or not isinstance(value, str):
        raise SecretDecryptError(
            f"the encrypted value belongs to another row or field, not {binding.model}.{binding.field}"
        )
    return value


def reencrypt_str(token: str, *, binding: SecretBinding) -> str:
    """The same secret encrypted again with the first key (checks the binding on the way)."""
    return encrypt_str(decrypt_str(token, binding=binding), binding=binding)


class Ciphertext:
    """A token as loaded from the database; decrypted on first read and cached."""

    __slots__ = ("token", "_plain")

    def __init__(self, token: str) -> None:
        self.token = token
        self._plain: str | None = None

    def reveal(self, binding: SecretBinding) -> str:
        if self._plain is None:
            self._plain = decrypt_str(self.token, binding=binding)
        return self._plain

    def __repr__(self) -> str:
        return "<Ciphertext>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Ciphertext) and other.token == self.token

    def __hash__(self) -> int:
        return hash(self.token)


class _EncryptedAttribute(DeferredAttribute):
    """Data descriptor: reads decrypt the stored token; writes keep plaintext until save."""

    def __get__(self, instance: Any, cls: Any = None) -> Any:
        if instance is None:
            return self
        value = super().__get__(instance, cls)
        if isinstance(value, Ciphertext):
            field = self.field
            assert isinstance(field, EncryptedTextField)
            return value.reveal(field.binding_for(instance))
        return value

    def __set__(self, instance: Any, value: Any) -> None:
        instance.__dict__[self.field.attname] = "" if value is None else value


class EncryptedTextField(models.TextField):
    """A text column that holds a Fernet token bound to its row; the attribute reads as plaintext.

    Not editable in model forms (secrets get their own write-only inputs), never queried by value, and
    ``queryset.update()`` with plaintext is refused rather than storing it in the clear.
    """

    descriptor_class = _EncryptedAttribute

    def __init__(self, *args: Any, org_field: str = "organization", **kwargs: Any) -> None:
        self.org_field = org_field
        kwargs.setdefault("blank", True)
        kwargs.setdefault("default", "")
        kwargs.setdefault("editable", False)
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> Any:
        name, path, args, kwargs = super().deconstruct()
        if self.org_field != "organization":
            kwargs["org_field"] = self.org_field
        return name, path, args, kwargs

    def binding_for(self, instance: models.Model) -> SecretBinding:
        if instance.pk is None:
            raise ValueError(
                f"{type(instance).__name__} needs its primary key before an encrypted field is used; "
                "give the model a UUID primary key with a default"
            )
        org_id = getattr(instance, f"{self.org_field}_id", None) if self.org_field else None
        return SecretBinding(
            model=instance._meta.label_lower,
            org_id="" if org_id is None else str(org_id),
            row_id=str(instance.pk),
            field=self.name,
        )

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return Ciphertext(value) if value else ""

    def to_python(self, value: Any) -> Any:
        if value is None or isinstance(value, Ciphertext):
            return value or ""
        return str(value)

    def pre_save(self, model_instance: models.Model, add: bool) -> Any:
        value = model_instance.__dict__.get(self.attname, "")
        if isinstance(value, Ciphertext) or not value:
            return value or ""
        token = Ciphertext(encrypt_str(str(value), binding=self.binding_for(model_instance)))
        token._plain = str(value)
        model_instance.__dict__[self.attname] = token
        return token

    def get_prep_value(self, value: Any) -> Any:
        if isinstance(value, Ciphertext):
            return value.token
        if value is None or value == "":
            return ""
        raise TypeError(
            f"{self.model.__name__}.{self.name} is encrypted: set it on the instance and save(); "
            "it cannot be written with update() or used in a query"
        )

    def value_from_object(self, obj: models.Model) -> Any:
        value = obj.__dict__.get(self.attname, "")
        return value.token if isinstance(value, Ciphertext) else ""

    def value_to_string(self, obj: models.Model) -> str:
        return self.value_from_object(obj)

    def formfield(self, form_class: Any = None, choices_form_class: Any = None, **kwargs: Any) -> None:
        return None


def encrypted_fields() -> dict[type[models.Model], list[EncryptedTextField]]:
    """Every installed concrete model with encrypted fields, and those fields."""
    found: dict[type[models.Model], list[EncryptedTextField]] = {}
    for model in apps.get_models():
        fields = [f for f in model._meta.concrete_fields if isinstance(f, EncryptedTextField)]
        if fields:
            found[model] = fields
    return found


@dataclass(frozen=True, slots=True)
class RotationReport:
    """What a key rotation did: values re-encrypted, and the rows whose value could not be opened."""

    reencrypted: int
    failed: tuple[str, ...]  # "app.model:<pk>.field", no secret material


def rotate_encryption_keys(
    *, models_and_fields: Iterable[tuple[type[models.Model], list[EncryptedTextField]]] | None = None
) -> RotationReport:
    """Re-encrypt every encrypted value with the first key. Unreadable values are reported, left as is."""
    items = encrypted_fields().items() if models_and_fields is None else models_and_fields
    count = 0
    failed: list[str] = []
    for model, fields in items:
        names = [f.attname for f in fields]
        columns = ["pk", *names]
        org_fields = sorted({f"{f.org_field}_id" for f in fields if f.org_field})
        for row in model._default_manager.values(*columns, *org_fields).iterator(chunk_size=500):
            updates: dict[str, Ciphertext] = {}
            for field in fields:
                stored = row[field.attname]
                token = stored.token if isinstance(stored, Ciphertext) else stored
                if not token:
                    continue
                org_id = row.get(f"{field.org_field}_id") if field.org_field else None
                binding = SecretBinding(
                    model=model._meta.label_lower,
                    org_id="" if org_id is None else str(org_id),
                    row_id=str(row["pk"]),
                    field=field.name,
                )
                try:
                    updates[field.attname] = Ciphertext(reencrypt_str(token, binding=binding))
                except SecretDecryptError:
                    failed.append(f"{model._meta.label_lower}:{row['pk']}.{field.name}")
            if updates:
                model._default_manager.filter(pk=row["pk"]).update(**updates)
                count += len(updates)
    return RotationReport(reencrypted=count, failed=tuple(failed))
