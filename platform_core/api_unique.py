"""Organisation-scoped uniqueness for API serializers.

A tenant model's ``UniqueConstraint(fields=["organization", "name"])`` cannot be checked by DRF's own
``UniqueTogetherValidator``: the organisation is not a serializer field (the view sets it from the URL).
:class:`OrgUniqueValidator` checks every such constraint against the serializer's ``context["org"]``
before the write, so a taken name is a 400 on that field instead of an ``IntegrityError``.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils.text import capfirst
from django.utils.translation import gettext as _
from rest_framework import serializers

ORG_FIELD = "organization"


def org_unique_field_sets(model: type[models.Model]) -> list[tuple[str, ...]]:
    """The other fields of each unconditional unique constraint that includes the organisation."""
    field_sets = []
    for constraint in model._meta.constraints:
        if not isinstance(constraint, models.UniqueConstraint) or constraint.condition is not None:
            continue
        if constraint.expressions or ORG_FIELD not in constraint.fields:
            continue
        others = tuple(name for name in constraint.fields if name != ORG_FIELD)
        if others:
            field_sets.append(others)
    return field_sets


class OrgUniqueValidator:
    """Refuses values that another row of the URL's organisation already holds (``Meta.validators``)."""

    requires_context = True

    def __call__(self, attrs: dict[str, Any], serializer: serializers.ModelSerializer) -> None:
        org = serializer.context.get("org")
        if org is None:
            return
        model = serializer.Meta.model
        instance = serializer.instance
        for fields in org_unique_field_sets(model):
            if instance is not None and not any(name in attrs for name in fields):
                continue  # an update that does not touch these fields cannot break the constraint
            values = {name: _value(model, instance, attrs, name) for name in fields}
            rows = model._default_manager.filter(**{ORG_FIELD: org}, **values)
            if instance is not None:
                rows = rows.exclude(pk=instance.pk)
            if rows.exists():
                field = _reported_field(fields, values)
                raise serializers.ValidationError({field: [_taken_message(model, field)]}, code="unique")


def _value(model: type[models.Model], instance: Any, attrs: dict[str, Any], name: str) -> Any:
    """The value the row will hold: the submitted one, else the instance's, else the field's default (a
    create that leaves a field out stores its default, which a duplicate may share)."""
    if name in attrs:
        return attrs[name]
    if instance is not None:
        return getattr(instance, name, None)
    field = model._meta.get_field(name)
    return field.get_default() if isinstance(field, models.Field) else None


def _reported_field(fields: tuple[str, ...], values: dict[str, Any]) -> str:
    """The field a taken value is reported on: the last one that holds a value (a Feishu sign-in rule's
    tenant key, not its blank e-mail domain), else the last one."""
    filled = [name for name in fields if values.get(name) not in (None, "")]
    return filled[-1] if filled else fields[-1]


def _taken_message(model: type[models.Model], field: str) -> str:
    return _("%(model)s with this %(field)s already exists in this organisation.") % {
        "model": capfirst(model._meta.verbose_name),
        "field": getattr(model._meta.get_field(field), "verbose_name", field),
    }
