"""``{% org_dashboard as dashboard %}``: the admin home page's cards for the signed-in admin.

The organisations are those whose admin pages the user may use
(:func:`platform_core.tenancy.admin_orgs.admin_orgs`), so the home page is scoped exactly like every other
admin page.
"""

from __future__ import annotations

from typing import Any

from django import template

from platform_core.tenancy.admin_orgs import admin_orgs
from platform_core.wiring import admin_dashboard

register = template.Library()


@register.simple_tag(takes_context=True)
def org_dashboard(context: dict[str, Any]) -> admin_dashboard.OrgDashboard | None:
    """The cards of the organisations the request's user administers (None without a request)."""
    request = context.get("request")
    if request is None:
        return None
    return admin_dashboard.org_dashboard(organizations=admin_orgs(request))
