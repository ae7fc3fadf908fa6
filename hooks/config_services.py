"""Write services for the guard rails' configuration (policies, Feishu channels, rate limits, per-agent
hook settings). Each save or delete is one transaction with one audit row; secrets are recorded only as
set or not set.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models, transaction

from hooks.models import AgentHookSettings, ApprovalPolicy, FeishuChannel, RateLimit
from platform_core.models import Organization
from platform_core.services import audit_log_write

AUDITED_MODELS: dict[type[models.Model], str] = {
    ApprovalPolicy: "approval_policy",
    FeishuChannel: "feishu_channel",
    RateLimit: "rate_limit",
    AgentHookSettings: "agent_hook_settings",
}


def config_state(instance: models.Model) -> dict[str, Any]:
    """The audit view of a configuration row: its fields, its many-to-many ids, and which secrets are set."""
    secrets = set(getattr(instance, "SECRET_FIELDS", ()))
    state: dict[str, Any] = {}
    for field in instance._meta.concrete_fields:
        if field.primary_key or field.name in ("organization", "created_at", "updated_at"):
            continue
        if field.name in secrets:
            state[f"{field.name}_set"] = bool(instance.__dict__.get(field.attname))
        else:
            state[field.name] = getattr(instance, field.attname)
    if instance.pk is not None:
        for field in instance._meta.many_to_many:
            state[field.name] = sorted(
                str(pk) for pk in getattr(instance, field.name).values_list("pk", flat=True)
            )
    return json.loads(json.dumps(state, cls=DjangoJSONEncoder))


def credential_changes(instance: models.Model) -> dict[str, str]:
    """The secrets the last save of ``instance`` replaced, each as ``"changed"`` (never a value)."""
    secrets = set(getattr(instance, "SECRET_FIELDS", ()))
    return {name: "changed" for name in getattr(instance, "changed_credentials", ()) if name in secrets}


def _changes(
    before: dict[str, Any] | None, after: dict[str, Any]
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    if before is None:
        return None, after
    keys = [k for k in after if before.get(k) != after[k]]
    return {k: before.get(k) for k in keys}, {k: after[k] for k in keys}


@transaction.atomic
def config_save(
    *,
    instance: models.Model,
    actor: AbstractBaseUser | None,
    m2m: Mapping[str, Iterable[Any]] | None = None,
    secrets: Mapping[str, str | None] | None = None,
    ip_address: str | None = None,
) -> models.Model:
    """Validate and save a new or changed configuration row (and its many-to-many sets), with an audit row.

    ``secrets`` maps secret field names to a new value (``""``/``None`` clears it; a missing key keeps it).
    """
    label = AUDITED_MODELS[type(instance)]
    created = instance._state.adding
    before = None if created else config_state(type(instance).objects.get(pk=instance.pk))
    allowed = set(getattr(instance, "SECRET_FIELDS", ()))
    for name, value in (secrets or {}).items():
        if name not in allowed:
            raise ValueError(f"{name!r} is not a secret field of {type(instance).__name__}")
        setattr(instance, name, value or "")
    instance.full_clean(exclude=[f.name for f in instance._meta.many_to_many])
    instance.save()
    for name, values in (m2m or {}).items():
        getattr(instance, name).set(values)
    old, new = _changes(before, config_state(instance))
    new = {**new, **credential_changes(instance)}
    if created or new:
        audit_log_write(
            organization=Organization.objects.get(pk=instance.organization_id),
            actor=actor,
            action=f"{label}.created" if created else f"{label}.updated",
            target=instance,
            before=old,
            after=new,
            ip_address=ip_address,
        )
    return instance


@transaction.atomic
def config_delete(
    *, instance: models.Model, actor: AbstractBaseUser | None, ip_address: str | None = None
) -> None:
    """Delete a configuration row with an audit row holding its last state."""
    label = AUDITED_MODELS[type(instance)]
    audit_log_write(
        organization=Organization.objects.get(pk=instance.organization_id),
        actor=actor,
        action=f"{label}.deleted",
        target=instance,
        before=config_state(instance),
        ip_address=ip_address,
    )
    instance.delete()
