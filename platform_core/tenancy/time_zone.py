"""Times on a page read in the time zone of the organisation the page belongs to.

Web pages under ``/o/<slug>/`` activate their organisation's zone when they resolve it
(:func:`platform_core.tenancy.scoping.member_org_from_slug`); the admin's pages use the zone of the one
organisation the user administers (an admin of several organisations, and a superuser, see the site's
``TIME_ZONE``). :class:`OrganizationTimeZoneMiddleware` does the admin's part and ends every request in the
site's zone, so a zone never outlives its request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from platform_core.models import Organization
from platform_core.tenancy.admin_orgs import admin_orgs


def organization_time_zone_activate(organization: Organization) -> None:
    """Show this request's times in ``organization``'s time zone."""
    timezone.activate(organization.time_zone)


class OrganizationTimeZoneMiddleware:
    """Activates the administered organisation's zone on admin pages; resets the zone after each request."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        timezone.deactivate()
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()

    def process_view(
        self, request: HttpRequest, view_func: Any, view_args: Any, view_kwargs: dict[str, Any]
    ) -> None:
        match = request.resolver_match
        if match is None or "admin" not in match.namespaces:
            return
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated or not user.is_staff or user.is_superuser:
            return
        orgs = list(admin_orgs(request).only("pk", "time_zone")[:2])
        if len(orgs) == 1:
            organization_time_zone_activate(orgs[0])
