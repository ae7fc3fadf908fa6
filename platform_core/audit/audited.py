"""One audited write for every configurable model (agents, model endpoints, connectors and their actions,
guard rails): each save or delete is one transaction with one audit row naming who, what and the state
before and after. Secrets (encrypted fields and a model's ``SECRET_FIELDS``) are recorded only as set or
not set, and as ``"changed"`` when a save replaced one; their values never reach the audit log.

The admin's base class and the API's viewset mixin call these, so every path writes the same row.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models, transaction

from platform_core.audit.log import audit_log_write
from platform_core.crypto import Ciphertext, EncryptedTextField, SecretDecryptError
from platform_core.models import AuditLog, Organization, OrgOwnedModel

if TYPE_CHECKING:
    from django.contrib.auth.models import User

_UNAUDITED_FIELDS = frozenset({"organization", "created_at", "updated_at"})
CHANGED = "changed"


def audit_entity(model: type[models.Model]) -> str:
    """The prefix of ``model``'s audit actions: ``AUDIT_NAME`` if set, else its class name in snake case."""
    name = getattr(model, "AUDIT_NAME", None)
    return name or re.sub(r"(?<!^)(?=[A-Z])", "_", model.__name__).lower()


def secret_field_names(model: type[models.Model]) -> tuple[str, ...]:
    """Fields of ``model`` that hold secrets: its encrypted fields and its ``SECRET_FIELDS``."""
    names = [f.name for f in model._meta.concrete_fields if isinstance(f, EncryptedTextField)]
    names += [n for n in getattr(model, "SECRET_FIELDS", ()) if n not in names]
    return tuple(names)


def audit_state(instance: models.Model) -> dict[str, Any]:
    """The audit view of a row: its fields, its many-to-many ids, and which secrets are set."""
    secrets = set(secret_field_names(type(instance)))
    state: dict[str, Any] = {}
    for f in instance._meta.concrete_fields:
        if f.primary_key or f.name in _UNAUDITED_FIELDS:
            continue
        if f.name in secrets:
            state[f"{f.name}_set"] = bool(instance.__dict__.get(f.attname))
        elif isinstance(f, models.FileField):
            state[f.name] = getattr(instance, f.attname).name or ""  # the stored file's name
        else:
            state[f.name] = getattr(instance, f.attname)
    if instance.pk is not None and not instance._state.adding:
        for f in instance._meta.many_to_many:
            state[f.name] = sorted(str(pk) for pk in getattr(instance, f.name).values_list("pk", flat=True))
    return json.loads(json.dumps(state, cls=DjangoJSONEncoder))


@dataclass(frozen=True, slots=True)
class AuditStart:
    """What a row was before a change: ``before`` is None for a new row; ``stored_secrets`` holds the
    stored (encrypted) secret values, compared after the save without ever being recorded."""

    before: dict[str, Any] | None
    stored_secrets: Mapping[str, Any]


def audit_start(instance: models.Model) -> AuditStart:
    """Read the stored row behind ``instance`` (locked until the transaction ends) before changing it."""
    if instance._state.adding:
        return AuditStart(before=None, stored_secrets={})
    stored = type(instance)._default_manager.select_for_update().get(pk=instance.pk)
    secrets = {name: stored.__dict__.get(name, "") for name in secret_field_names(type(instance))}
    return AuditStart(before=audit_state(stored), stored_secrets=secrets)


def _plain(value: Any, instance: models.Model, name: str) -> str:
    if isinstance(value, Ciphertext):
        field = instance._meta.get_field(name)
        assert isinstance(field, EncryptedTextField)
        return value.reveal(field.binding_for(instance))
    return str(value or "")


def _secret_changed(instance: models.Model, name: str, stored: Any) -> bool:
    current = instance.__dict__.get(name, "")
    if not current:  # cleared (or never set): ``<name>_set`` going false records it
        return False
    if isinstance(current, Ciphertext) and current == stored:
        return False
    try:
        return _plain(current, instance, name) != _plain(stored, instance, name)
    except SecretDecryptError:  # a value that no longer decrypts was replaced
        return True


def secret_changes(instance: models.Model, start: AuditStart) -> dict[str, str]:
    """The secrets given a new value (different from the stored one), each as ``"changed"``."""
    return {
        name: CHANGED
        for name in secret_field_names(type(instance))
        if _secret_changed(instance, name, start.stored_secrets.get(name, ""))
    }


def audit_finish(
    *,
    instance: OrgOwnedModel,
    start: AuditStart,
    actor: User | None,
    ip_address: str | None = None,
) -> AuditLog | None:
    """Write the audit row of a saved row (after its many-to-many sets); nothing if nothing changed."""
    after = audit_state(instance)
    before = start.before
    if before is not None:
        keys = [k for k in after if before.get(k) != after[k]]
        before, after = {k: before.get(k) for k in keys}, {k: after[k] for k in keys}
    after.update(secret_changes(instance, start))
    if start.before is not None and not after:
        return None
    verb = "created" if start.before is None else "updated"
    return audit_log_write(
        organization=Organization.objects.get(pk=instance.organization_id),
        actor=actor,
        action=f"{audit_entity(type(instance))}.{verb}",
        target=instance,
        before=before,
        after=after,
        ip_address=ip_address,
    )


@transaction.atomic
def audited_save(
    *,
    instance: OrgOwnedModel,
    actor: User | None,
    m2m: Mapping[str, Iterable[Any]] | None = None,
    secrets: Mapping[str, str | None] | None = None,
    ip_address: str | None = None,
) -> OrgOwnedModel:
    """Validate and save a new or changed row (and its many-to-many sets) with its audit row.

    ``secrets`` maps secret field names to a new value (``""``/``None`` clears it; a missing key keeps it).
    """
    start = audit_start(instance)
    allowed = secret_field_names(type(instance))
    for name, value in (secrets or {}).items():
        if name not in allowed:
            raise ValueError(f"{name!r} is not a secret field of {type(instance).__name__}")
        setattr(instance, name, value or "")
    instance.full_clean(exclude=[f.name for f in instance._meta.many_to_many])
    instance.save()
    for name, values in (m2m or {}).items():
        getattr(instance, name).set(values)
    audit_finish(instance=instance, start=start, actor=actor, ip_address=ip_address)
    return instance


@transaction.atomic
def audited_delete(*, instance: OrgOwnedModel, actor: User | None, ip_address: str | None = None) -> None:
    """Delete a row with an audit row holding its last state."""
    audit_log_write(
        organization=Organization.objects.get(pk=instance.organization_id),
        actor=actor,
        action=f"{audit_entity(type(instance))}.deleted",
        target=instance,
        before=audit_state(instance),
        ip_address=ip_address,
    )
    instance.delete()
