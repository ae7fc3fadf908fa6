"""The admin base of an organisation's history (connector calls, approval requests): read, never written."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from platform_core.admin.base import OrgScopedAdmin


class HistoryAdmin(OrgScopedAdmin):
    """Rows the platform writes as things happen: every field is read-only, and nobody adds, changes or
    deletes one by hand."""

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        opts = self.model._meta
        return [f.name for f in opts.fields] + [f.name for f in opts.many_to_many]

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
