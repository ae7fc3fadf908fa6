"""An organisation's configuration version: what per-process caches of its agents' setup check.

Every save or delete of a watched model (each app names its own with :func:`config_watch`) gives the
row's organisation a new version in the same transaction, so a reader that sees the change also sees
the new version. A run reads the version together with the run itself (one join, no extra query).
"""

from __future__ import annotations

import secrets
from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.db import IntegrityError, transaction
from django.db.models import Model, QuerySet
from django.db.models.signals import m2m_changed, post_delete, post_save

from platform_core.models import ConfigVersion, Organization


def config_version_bump(organization_id: int) -> None:
    """Record that the organisation's agent configuration changed (sync, in the caller's transaction)."""
    for _ in range(2):
        if ConfigVersion.objects.filter(pk=organization_id).update(version=config_version_new()):
            return
        try:
            with transaction.atomic():
                ConfigVersion.objects.create(organization_id=organization_id, version=config_version_new())
            return
        except IntegrityError:
            continue  # created meanwhile by another change (or the organisation is gone): update it


def config_version_new() -> int:
    """A fresh version: random rather than counted, so that a number is never seen twice for different
    configurations, even where organisation ids are reused (a database emptied or rolled back under a
    running process, as tests do)."""
    return secrets.randbits(62)


def config_version_of(organization: Organization) -> int:
    """The version of an organisation loaded with ``select_related("config_version")`` (0 when it has
    no version row: an organisation created without signals, such as by ``bulk_create``)."""
    try:
        return organization.config_version.version
    except ObjectDoesNotExist:
        return 0


def _bump_for(sender: Any, instance: Model, **kwargs: Any) -> None:
    organization_id = getattr(instance, "organization_id", None)
    if organization_id is None or kwargs.get("raw") or _organization_deleted(kwargs.get("origin")):
        return
    config_version_bump(organization_id)


def _organization_deleted(origin: Any) -> bool:
    """Whether a delete cascades from an organisation's own (its version row goes with it)."""
    if isinstance(origin, QuerySet):
        return origin.model is Organization
    return isinstance(origin, Organization)


def _bump_for_m2m(sender: Any, instance: Model, action: str, **kwargs: Any) -> None:
    if action.startswith("post_"):
        _bump_for(sender, instance)


def config_version_start(sender: Any, instance: Organization, created: bool = False, **kwargs: Any) -> None:
    """A new organisation starts with a version of its own (``post_save`` of :class:`Organization`)."""
    if created and not kwargs.get("raw"):
        ConfigVersion.objects.get_or_create(organization=instance, defaults={"version": config_version_new()})


def config_watch(*models: type[Model], m2m: tuple[Any, ...] = ()) -> None:
    """Bump the organisation's version on every save and delete of ``models`` (organisation-owned) and
    every change of the ``m2m`` through tables (whose instance side is organisation-owned)."""
    for model in models:
        uid = f"config_version.{model._meta.label}"
        post_save.connect(_bump_for, sender=model, dispatch_uid=f"{uid}.save")
        post_delete.connect(_bump_for, sender=model, dispatch_uid=f"{uid}.delete")
    for through in m2m:
        m2m_changed.connect(
            _bump_for_m2m, sender=through, dispatch_uid=f"config_version.{through._meta.label}"
        )
