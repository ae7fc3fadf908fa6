"""The organisations whose admin pages a request's user may use, resolved once per request: what every
admin page (:class:`platform_core.admin.base.OrgScopedAdmin`), the admin's home page and the admin's time
zone (:mod:`.time_zone`) are scoped to."""

from __future__ import annotations

from weakref import WeakKeyDictionary

from django.db.models import QuerySet
from django.http import HttpRequest

from platform_core.models import Organization
from platform_core.request_meta import signed_in_user
from platform_core.selectors import admin_organizations_for_user

_ADMIN_ORGS_OF_REQUEST: WeakKeyDictionary[HttpRequest, QuerySet[Organization]] = WeakKeyDictionary()


def admin_orgs(request: HttpRequest) -> QuerySet[Organization]:
    """Organisations whose admin pages ``request.user`` may use, cached for the request's lifetime."""
    cached = _ADMIN_ORGS_OF_REQUEST.get(request)
    if cached is None:
        cached = admin_organizations_for_user(user=signed_in_user(request))
        _ADMIN_ORGS_OF_REQUEST[request] = cached
    return cached
