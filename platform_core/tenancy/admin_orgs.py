"""The organisations whose admin pages a request's user may use, resolved once per request: what every
admin page (:class:`platform_core.admin.base.OrgScopedAdmin`), the admin's home page and the admin's time
zone (:mod:`.time_zone`) are scoped to."""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import HttpRequest

from platform_core.models import Organization
from platform_core.request_meta import signed_in_user
from platform_core.selectors import admin_organizations_for_user


def admin_orgs(request: HttpRequest) -> QuerySet[Organization]:
    """Organisations whose admin pages ``request.user`` may use, cached on the request."""
    cached = getattr(request, "_admin_orgs", None)
    if cached is None:
        cached = admin_organizations_for_user(user=signed_in_user(request))
        request._admin_orgs = cached  # type: ignore[attr-defined]
    return cached
