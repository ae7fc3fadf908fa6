"""Tenancy at the edges: resolve the organisation once from the URL, then scope everything to it.

- API views inherit :class:`OrgScopedViewMixin` (or the viewsets built on it). The organisation comes
  from the ``org_slug`` URL kwarg; a user who is not a member gets the same 404 as for a missing org.
- Web pages resolve it with :func:`member_org_from_slug` (members only, superusers included).
  ``get_queryset`` is scoped to that organisation and subclasses only narrow it further.
- Permission classes check the caller's role in that organisation; every org route also limits an API
  key to its scopes.
- An organisation key reaches only its own organisation: its service user's membership anywhere else
  does not count (``Membership.objects``, :class:`platform_core.models.MembershipManager`), so the
  resolution here, like every other membership check, answers 404 there.
- Admin classes of tenant models inherit :class:`OrgScopedAdmin` (in ``platform_core.admin.base``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db.models import Model, QuerySet
from django.http import Http404
from rest_framework import permissions, serializers
from rest_framework.request import Request

from platform_core.identity.api_keys.permissions import HasApiKeyScope
from platform_core.models import ADMIN_ROLES, Membership, Organization, Role
from platform_core.selectors import membership_for, organization_get_for_user
from platform_core.tenancy.time_zone import organization_time_zone_activate

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from rest_framework.generics import GenericAPIView as _MixedInto
else:
    _MixedInto = object  # at run time a plain mixin: the view class supplies DRF's methods

ORG_KWARG = "org_slug"


def org_from_slug(*, user: User, slug: str) -> tuple[Organization, Membership | None]:
    """The organisation a URL names and the user's membership of it (``None`` for a superuser who is not
    a member). A missing organisation and one the user may not see raise the same 404."""
    org = organization_get_for_user(user=user, slug=slug)
    return org, membership_for(user=user, organization=org)


def member_org_from_slug(*, user: User, slug: str) -> tuple[Organization, Membership]:
    """:func:`org_from_slug` for the web pages, which only members see: a superuser who is not a member
    gets the 404 too (the chat websocket refuses them as well). The request's times then read in the
    organisation's time zone (:mod:`platform_core.tenancy.time_zone`)."""
    org, membership = org_from_slug(user=user, slug=slug)
    if membership is None:
        raise Http404("No such organisation.")
    organization_time_zone_activate(org)  # the page's times read in the organisation's zone
    return org, membership


def role_in(request: Any, roles: frozenset[str]) -> bool:
    if request.user.is_superuser:
        return True
    membership = getattr(request, "org_membership", None)
    return membership is not None and membership.role in roles


class IsOrgMember(permissions.BasePermission):
    """Any role in the URL's organisation (resolution already 404s non-members)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        return getattr(request, "org", None) is not None


class IsOrgAdmin(permissions.BasePermission):
    """Owner or admin of the URL's organisation."""

    message = "Only organisation owners and admins may do this."

    def has_permission(self, request: Request, view: Any) -> bool:
        return role_in(request, ADMIN_ROLES)


class IsOrgAdminOrReadOnly(permissions.BasePermission):
    """Members may read; owners and admins may also write."""

    message = "Only organisation owners and admins may change this."

    def has_permission(self, request: Request, view: Any) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return getattr(request, "org", None) is not None
        return role_in(request, ADMIN_ROLES)


class IsOrgApprover(permissions.BasePermission):
    """Approvers, admins and owners of the URL's organisation."""

    message = "Only approvers may decide approvals."

    def has_permission(self, request: Request, view: Any) -> bool:
        return role_in(request, ADMIN_ROLES | {Role.APPROVER})


def refuse_get_queryset(cls: type, *, scoped_to: str, narrow_in: str) -> None:
    """Refuse a class that overrides ``get_queryset``, which scopes its rows (to ``scoped_to``): it narrows
    them in the method ``narrow_in`` instead."""
    if "get_queryset" in cls.__dict__:
        raise TypeError(
            f"{cls.__qualname__} overrides get_queryset, which scopes rows to {scoped_to}: "
            f"narrow them in {narrow_in} instead"
        )


class OrgScopedViewMixin(_MixedInto):
    """Resolves ``request.org`` from the URL before any permission check and scopes querysets to it.

    Subclasses set ``queryset`` (or override :meth:`get_base_queryset`) and may narrow the result in
    :meth:`filter_org_queryset`; a subclass that overrides ``get_queryset`` itself is refused when it is
    defined (its rows would no longer be scoped by construction).
    """

    org_field = "organization"
    permission_classes = [permissions.IsAuthenticated, IsOrgMember]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        refuse_get_queryset(cls, scoped_to="the URL's organisation", narrow_in="filter_org_queryset")

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        self.perform_authentication(request)
        if not request.user or not request.user.is_authenticated:
            # Let DRF answer 401/403 for anonymous callers before any org lookup.
            super().initial(request, *args, **kwargs)
            return
        org, membership = org_from_slug(user=request.user, slug=kwargs[ORG_KWARG])
        request.org = org
        request.org_membership = membership
        self.org = org
        super().initial(request, *args, **kwargs)

    def get_permissions(self) -> list[Any]:
        """The view's permissions, after the API key scope check that every org route has
        (:class:`~platform_core.identity.api_keys.permissions.HasApiKeyScope`; views mark chat writes with
        ``api_key_write_scope`` or ``api_key_scopes``)."""
        return [HasApiKeyScope(), *super().get_permissions()]

    def get_base_queryset(self) -> QuerySet:
        return self.queryset.all()

    def filter_org_queryset(self, queryset: QuerySet) -> QuerySet:
        return queryset

    def get_queryset(self) -> QuerySet:
        if getattr(self, "swagger_fake_view", False):  # schema generation has no org
            return self.get_base_queryset().none()
        scoped = self.get_base_queryset().filter(**{self.org_field: self.org})
        return self.filter_org_queryset(scoped)

    def get_serializer_context(self) -> dict[str, Any]:
        context = super().get_serializer_context()
        context["org"] = getattr(self, "org", None)
        return context

    def perform_create(self, serializer: Any) -> None:
        serializer.save(**{self.org_field: self.org})


def object_get_for_org(queryset: QuerySet, *, org: Organization, **lookup: Any) -> Model:
    """Fetch one object of ``org``; a missing object and another org's object raise the same 404."""
    obj = queryset.filter(organization=org, **lookup).first()
    if obj is None:
        raise Http404("Not found.")
    return obj


class OrgScopedPrimaryKeyField(serializers.PrimaryKeyRelatedField):
    """A primary-key relation whose choices are the URL organisation's rows only (the view set's
    ``org`` in the serializer context; none without one)."""

    def get_queryset(self) -> Any:
        org = self.context.get("org")
        queryset = super().get_queryset()
        return queryset.filter(organization=org) if org is not None else queryset.none()
