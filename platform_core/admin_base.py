"""The org-scoped ModelAdmin base that every tenant model's admin uses.

An org admin (role owner or admin, with ``is_staff``) sees and changes only the rows of organisations
they administer; superusers see everything. Foreign-key choices, list filters and autocomplete answers
are scoped the same way, and a new row gets the organisation from the form (limited to the user's
organisations) or, when the user administers exactly one, automatically.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest

from platform_core.models import Organization
from platform_core.selectors import admin_organizations_for_user


def admin_orgs(request: HttpRequest) -> QuerySet[Organization]:
    """Organisations whose admin pages ``request.user`` may use, cached on the request."""
    cached = getattr(request, "_admin_orgs", None)
    if cached is None:
        cached = admin_organizations_for_user(user=request.user)
        request._admin_orgs = cached  # type: ignore[attr-defined]
    return cached


def _model_org_path(model: type[models.Model]) -> str | None:
    """The lookup path from ``model`` to its organisation, or None if it is not tenant data."""
    if model is Organization:
        return "pk"
    names = {f.name for f in model._meta.get_fields()}
    if "organization" in names:
        return "organization"
    return getattr(model, "org_lookup", None)


class OrgScopedChoicesMixin:
    """Limits foreign-key and many-to-many choices to the organisations the admin user administers."""

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        related = db_field.related_model
        if not request.user.is_superuser and related is not None:
            if related is Organization:
                kwargs["queryset"] = admin_orgs(request)
            elif _model_org_path(related) is not None:
                path = _model_org_path(related)
                kwargs["queryset"] = related._default_manager.filter(**{f"{path}__in": admin_orgs(request)})
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def formfield_for_manytomany(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        related = db_field.related_model
        if not request.user.is_superuser and related is not None:
            path = _model_org_path(related)
            if path is not None:
                key = "pk__in" if path == "pk" else f"{path}__in"
                kwargs["queryset"] = related._default_manager.filter(**{key: admin_orgs(request)})
        return super().formfield_for_manytomany(db_field, request, **kwargs)


class OrgScopedAdmin(OrgScopedChoicesMixin, admin.ModelAdmin):
    """Base admin for tenant models (those with an ``organization`` field or an ``org_lookup`` path)."""

    org_lookup: str | None = None

    # --- scoping --------------------------------------------------------------------------------
    def org_path(self) -> str:
        path = self.org_lookup or _model_org_path(self.model)
        if path is None:
            raise TypeError(f"{self.model.__name__} has no organisation; set org_lookup on its admin")
        return path

    def scope(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if request.user.is_superuser:
            return queryset
        path = self.org_path()
        key = "pk__in" if path == "pk" else f"{path}__in"
        return queryset.filter(**{key: admin_orgs(request)})

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return self.scope(request, super().get_queryset(request))

    def get_search_results(self, request: HttpRequest, queryset: QuerySet, search_term: str) -> Any:
        # Autocomplete asks the target model's admin: scope its answers too.
        queryset, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        return self.scope(request, queryset), may_have_duplicates

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        org_field = form.base_fields.get("organization")
        if org_field is not None and not request.user.is_superuser:
            orgs = admin_orgs(request)
            if orgs.count() == 1:
                org_field.initial = orgs.first()
        return form

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        if hasattr(obj, "organization_id") and obj.organization_id is None:
            orgs = admin_orgs(request)
            if orgs.count() == 1:
                obj.organization = orgs.first()
        super().save_model(request, obj, form, change)

    # --- permissions by role ----------------------------------------------------------------------
    def _is_org_admin(self, request: HttpRequest) -> bool:
        user = request.user
        return bool(user.is_active and user.is_staff and (user.is_superuser or admin_orgs(request).exists()))

    def _object_visible(self, request: HttpRequest, obj: Any) -> bool:
        if obj is None or request.user.is_superuser:
            return True
        return self.scope(request, self.model._default_manager.filter(pk=obj.pk)).exists()

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self._is_org_admin(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._is_org_admin(request) and self._object_visible(request, obj)

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return self._is_org_admin(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._is_org_admin(request) and self._object_visible(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._is_org_admin(request) and self._object_visible(request, obj)


class OrgScopedInline(OrgScopedChoicesMixin, admin.TabularInline):
    """Inline base: permissions follow the parent org admin; FK choices scoped like OrgScopedAdmin."""

    def _is_org_admin(self, request: HttpRequest) -> bool:
        user = request.user
        return bool(user.is_active and user.is_staff and (user.is_superuser or admin_orgs(request).exists()))

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._is_org_admin(request)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._is_org_admin(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._is_org_admin(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._is_org_admin(request)
