"""Appending to the audit log: one row per administrative change, written in that change's transaction."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import models

from platform_core.models import AuditLog, Organization

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def audit_log_write(
    *,
    organization: Organization,
    actor: User | None,
    action: str,
    target: models.Model | None = None,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    ip_address: str | None = None,
) -> AuditLog:
    """Append one audit row. Call it inside the transaction of the change it records."""
    return AuditLog.objects.create(
        organization=organization,
        actor=actor if actor is not None and actor.is_authenticated else None,
        action=action,
        target_type=target._meta.label_lower if target is not None else "",
        target_id=str(target.pk) if target is not None else "",
        target_repr=str(target)[:300] if target is not None else "",
        before=before,
        after=after,
        ip_address=ip_address or None,
    )
