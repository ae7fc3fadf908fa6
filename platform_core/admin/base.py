"""The org-scoped ModelAdmin base that every tenant model's admin uses.

An org admin (role owner or admin, with ``is_staff``) sees and changes only the rows of organisations
they administer; superusers see everything. Foreign-key choices, list filters and autocomplete answers
are scoped the same way, and a new row gets the organisation from the form (limited to the user's
organisations) or, when the user administers exactly one, automatically.

Nothing of another organisation is ever named: foreign-key and many-to-many choices, raw-id labels,
list filters on relations (and all-values filters through relations), ``?<field>=<id>`` prefills of
add pages and autocomplete answers all draw from :func:`admin_visible_rows`. Users are not tenant data;
an org admin sees only the users who are members of the organisations they administer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.contrib.admin.options import BaseModelAdmin
from django.contrib.admin.utils import get_fields_from_path, get_model_from_relation
from django.contrib.admin.widgets import ForeignKeyRawIdWidget
from django.contrib.auth import get_user_model
from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.db import models
from django.db.models import Q, QuerySet
from django.db.models.fields.related import RelatedField
from django.http import HttpRequest

from platform_core.audit.audited import audit_finish, audit_start, audited_delete
from platform_core.models import Membership, Organization
from platform_core.request_meta import client_ip, signed_in_user
from platform_core.tenancy.admin_orgs import admin_orgs
from platform_core.tenancy.scoping import refuse_get_queryset

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise  # django-stubs' own helper, a dev dependency


def _model_org_path(model: type[models.Model]) -> str | None:
    """The lookup path from ``model`` to its organisation, or None if it is not tenant data."""
    if model is Organization:
        return "pk"
    names = {f.name for f in model._meta.get_fields()}
    if "organization" in names:
        return "organization"
    return getattr(model, "org_lookup", None)


def admin_visible_rows(request: HttpRequest, model: type[models.Model]) -> QuerySet:
    """The rows of ``model`` that the admin pages of ``request.user`` may offer or name.

    Superusers see every row; an org admin sees the organisations they administer, the tenant rows of
    those organisations and the users who are members of them. Other models are not tenant data.
    """
    rows = model._default_manager.all()
    if request.user.is_superuser:
        return rows
    if model is Organization:
        return admin_orgs(request)
    if model is get_user_model():
        members = Membership.objects.filter(organization__in=admin_orgs(request)).values("user_id")
        return rows.filter(pk__in=members)
    path = _model_org_path(model)
    if path is None:
        return rows
    return rows.filter(**{f"{path}__in": admin_orgs(request)})


class OrgScopedForeignKeyRawIdWidget(ForeignKeyRawIdWidget):
    """A raw-id input that names the chosen object only when it is one of ``queryset``.

    Django's widget renders the label of any id it is given (a prefill, a refused POST redisplayed).
    """

    def __init__(self, rel: Any, admin_site: Any, *, queryset: QuerySet, **kwargs: Any) -> None:
        super().__init__(rel, admin_site, **kwargs)
        self.queryset = queryset

    def label_and_url_for_value(self, value: Any) -> tuple[str, str]:
        key = self.rel.get_related_field().name
        try:
            visible = self.queryset.filter(**{key: value}).exists()
        except (ValueError, ValidationError):
            return "", ""
        return super().label_and_url_for_value(value) if visible else ("", "")


class OrgScopedRelatedFieldListFilter(admin.RelatedFieldListFilter):
    """A relation's list filter: only related objects the user may see that their own rows use."""

    def field_choices(
        self, field: Any, request: HttpRequest, model_admin: Any
    ) -> list[tuple[str, StrOrPromise]]:
        if request.user.is_superuser:
            return super().field_choices(field, request, model_admin)
        used = model_admin.get_queryset(request).distinct().values_list(f"{self.field_path}__pk", flat=True)
        visible = admin_visible_rows(request, get_model_from_relation(field)).values("pk")
        return field.get_choices(
            include_blank=False,
            limit_choices_to=Q(pk__in=used) & Q(pk__in=visible),
            ordering=self.field_admin_ordering(field, request, model_admin),
        )


class OrgScopedAllValuesFieldListFilter(admin.AllValuesFieldListFilter):
    """An all-values list filter through a relation (``agent__name``): values of the user's rows only."""

    def __init__(
        self, field: Any, request: HttpRequest, params: Any, model: Any, model_admin: Any, field_path: str
    ) -> None:
        super().__init__(field, request, params, model, model_admin, field_path)
        if not request.user.is_superuser:
            rows = model_admin.get_queryset(request).order_by(field_path)
            self.lookup_choices = rows.distinct().values_list(field_path, flat=True)


_RELATED_FILTERS = (None, admin.RelatedFieldListFilter, admin.RelatedOnlyFieldListFilter)


def scoped_list_filter(model: type[models.Model], item: Any) -> Any:
    """``item`` of a ``list_filter`` with Django's relation and all-values filters replaced by scoped ones.

    A ``SimpleListFilter`` subclass is returned as it is: its ``lookups()`` must scope itself.
    """
    if isinstance(item, str):
        path, filter_class = item, None
    elif isinstance(item, (list, tuple)):
        path, filter_class = item
    else:
        return item
    fields = get_fields_from_path(model, path)
    last = fields[-1]
    if last.is_relation and filter_class in _RELATED_FILTERS:
        return (path, OrgScopedRelatedFieldListFilter)
    # Django's fallback for a plain field reached through a relation lists the values of every row.
    falls_back = (
        filter_class is None
        and len(fields) > 1
        and not last.flatchoices
        and not isinstance(last, (models.BooleanField, models.DateField))
    )
    if filter_class is admin.AllValuesFieldListFilter or falls_back:
        return (path, OrgScopedAllValuesFieldListFilter)
    return item


class OrgScopedChoicesMixin(BaseModelAdmin):
    """Limits foreign-key and many-to-many choices (and raw-id labels) to :func:`admin_visible_rows`."""

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        related = db_field.related_model
        if related is not None:
            if not request.user.is_superuser and "queryset" not in kwargs:
                kwargs["queryset"] = admin_visible_rows(request, related)
            if db_field.name in self.raw_id_fields and "widget" not in kwargs:
                kwargs["widget"] = OrgScopedForeignKeyRawIdWidget(
                    db_field.remote_field,
                    self.admin_site,
                    queryset=kwargs.get("queryset", related._default_manager.all()),
                    using=kwargs.get("using"),
                )
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def formfield_for_manytomany(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        related = db_field.related_model
        if not request.user.is_superuser and related is not None and "queryset" not in kwargs:
            kwargs["queryset"] = admin_visible_rows(request, related)
        return super().formfield_for_manytomany(db_field, request, **kwargs)


class OrgScopedAdmin(OrgScopedChoicesMixin, admin.ModelAdmin):
    """Base admin for tenant models (those with an ``organization`` field or an ``org_lookup`` path).

    Subclasses narrow the scoped rows in :meth:`narrow_queryset`; overriding ``get_queryset`` (which
    could drop the scoping) is refused when the class is defined.
    """

    org_lookup: str | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        refuse_get_queryset(cls, scoped_to="the user's organisations", narrow_in="narrow_queryset")

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
        return self.narrow_queryset(request, self.scope(request, super().get_queryset(request)))

    def narrow_queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        """The scoped rows as this admin lists them (annotated, filtered further); never wider."""
        return queryset

    def get_search_results(self, request: HttpRequest, queryset: QuerySet, search_term: str) -> Any:
        # Autocomplete asks the target model's admin: scope its answers too, and page them in a stable
        # order (an aggregate annotation drops Meta.ordering; the changelist orders on its own).
        queryset, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        queryset = self.scope(request, queryset)
        if not queryset.ordered:
            queryset = queryset.order_by(*(self.get_ordering(request) or ["pk"]))
        return queryset, may_have_duplicates

    def get_list_filter(self, request: HttpRequest) -> Any:
        return [scoped_list_filter(self.model, item) for item in super().get_list_filter(request)]

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        """``?<field>=<id>`` prefills, keeping only the related ids the user may see."""
        initial = super().get_changeform_initial_data(request)
        if request.user.is_superuser:
            return initial
        for name, value in list(initial.items()):
            try:
                field = self.opts.get_field(name)
            except FieldDoesNotExist:
                continue
            if not (
                isinstance(field, RelatedField) and field.concrete and isinstance(field.related_model, type)
            ):
                continue
            wanted = value if isinstance(value, list) else [value]
            key = field.target_field.name
            try:
                visible = admin_visible_rows(request, field.related_model).filter(**{f"{key}__in": wanted})
                allowed = {str(v) for v in visible.values_list(key, flat=True)}
            except (ValueError, ValidationError):
                allowed = set()
            kept = [v for v in wanted if str(v) in allowed]
            if kept:
                initial[name] = kept if isinstance(value, list) else kept[0]
            else:
                del initial[name]
        return initial

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


class AuditedAdmin(OrgScopedAdmin):
    """An org-scoped admin whose every add, change and delete writes one audit row
    (:mod:`platform_core.audit.audited`): the row is read before the save and compared after its
    many-to-many sets are saved, so a change of connectors or approvers is recorded too."""

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        starts = request.__dict__.setdefault("_audit_starts", {})
        starts[id(obj)] = audit_start(obj)
        super().save_model(request, obj, form, change)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        start = request.__dict__.get("_audit_starts", {}).pop(id(form.instance), None)
        if start is not None:
            audit_finish(
                instance=form.instance,
                start=start,
                actor=signed_in_user(request),
                ip_address=client_ip(request),
            )

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        audited_delete(instance=obj, actor=signed_in_user(request), ip_address=client_ip(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        for obj in queryset:
            audited_delete(instance=obj, actor=signed_in_user(request), ip_address=client_ip(request))


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


class HistoryAdmin(OrgScopedAdmin):
    """Rows the platform writes as things happen (the audit log, connector calls, approval requests):
    read, never added, changed or deleted by hand. Every field is read-only, or those the subclass names
    in ``readonly_fields`` (with display methods among them)."""

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        if self.readonly_fields:
            return list(self.readonly_fields)
        opts = self.model._meta
        return [f.name for f in opts.fields] + [f.name for f in opts.many_to_many]

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
