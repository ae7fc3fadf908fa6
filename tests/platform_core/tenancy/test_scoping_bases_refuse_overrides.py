"""The scoped API and admin bases keep their scoping: a subclass that overrides ``get_queryset`` (and
could return another organisation's rows) is refused when its class is defined, before any request."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework import viewsets

from connectors.models import Connector
from platform_core.admin.base import OrgScopedAdmin
from platform_core.tenancy.scoping import OrgScopedViewMixin


def test_a_viewset_overriding_get_queryset_fails_at_import() -> None:
    with pytest.raises(TypeError, match="overrides get_queryset.*filter_org_queryset"):

        class EveryConnector(OrgScopedViewMixin, viewsets.ModelViewSet):  # type: ignore[misc]
            queryset = Connector.objects.unscoped().all()

            def get_queryset(self) -> Any:
                return Connector.objects.unscoped().all()


def test_a_viewset_narrowing_in_filter_org_queryset_is_accepted() -> None:
    class ActiveConnectors(OrgScopedViewMixin, viewsets.ModelViewSet):  # type: ignore[misc]
        queryset = Connector.objects.unscoped().all()

        def filter_org_queryset(self, queryset: Any) -> Any:
            return queryset.filter(is_active=True)

    assert "get_queryset" not in ActiveConnectors.__dict__


def test_an_admin_overriding_get_queryset_fails_at_import() -> None:
    with pytest.raises(TypeError, match="overrides get_queryset.*narrow_queryset"):

        class EveryConnectorAdmin(OrgScopedAdmin):
            def get_queryset(self, request: Any) -> Any:
                return Connector.objects.unscoped().all()


def test_a_subclass_of_a_subclass_is_held_to_it_too() -> None:
    class NarrowAdmin(OrgScopedAdmin):
        def narrow_queryset(self, request: Any, queryset: Any) -> Any:
            return queryset.filter(is_active=True)

    with pytest.raises(TypeError):

        class WiderAdmin(NarrowAdmin):
            def get_queryset(self, request: Any) -> Any:
                return Connector.objects.unscoped().all()
