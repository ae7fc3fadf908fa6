"""The API side of the audited writes: a viewset mixin whose create, update and delete go through
:mod:`platform_core.audit.audited`, so the API writes the same audit row as the admin."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from platform_core.audit.audited import audited_delete, audited_save, secret_field_names
from platform_core.request_meta import client_ip

if TYPE_CHECKING:
    from django.db.models import QuerySet
    from rest_framework.request import Request

    from platform_core.models import Organization


class AuditedWritesMixin:
    """Put before :class:`~platform_core.tenancy.scoping.OrgScopedViewMixin`. The serializer validates;
    the row is built from its validated data (many-to-many sets and secrets split off) and saved by
    :func:`~platform_core.audit.audited.audited_save` with the URL's organisation."""

    # Declared for the type checker only: the view set this mixin is part of sets them (DRF's
    # GenericAPIView, OrgScopedViewMixin).
    queryset: QuerySet[Any]
    request: Request
    org: Organization
    org_field: str

    def _model(self) -> Any:
        return self.queryset.model

    def _split(self, data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        model = self._model()
        m2m = {f.name: data.pop(f.name) for f in model._meta.many_to_many if f.name in data}
        secrets = {name: data.pop(name) for name in secret_field_names(model) if name in data}
        return data, m2m, secrets

    def perform_create(self, serializer: Any) -> None:
        self._save(serializer, lambda data: self._model()(**{self.org_field: self.org}, **data))

    def perform_update(self, serializer: Any) -> None:
        def updated(data: dict[str, Any]) -> Any:
            for name, value in data.items():
                setattr(serializer.instance, name, value)
            return serializer.instance

        self._save(serializer, updated)

    def _save(self, serializer: Any, build: Callable[[dict[str, Any]], Any]) -> None:
        """Save, audited, the row ``build`` makes of the serializer's validated data (the many-to-many sets
        and the secrets split off and saved with it)."""
        data, m2m, secrets = self._split(dict(serializer.validated_data))
        serializer.instance = audited_save(
            instance=build(data),
            actor=self.request.user,
            m2m=m2m,
            secrets=secrets,
            ip_address=client_ip(self.request),
        )

    def perform_destroy(self, instance: Any) -> None:
        audited_delete(
            instance=instance,
            actor=self.request.user,
            ip_address=client_ip(self.request),
        )
