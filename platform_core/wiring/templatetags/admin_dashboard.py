"""``{% org_dashboard_cards as cards %}``: the admin home page's cards for the signed-in admin.

The organisations are those whose admin pages the user may use (:func:`platform_core.admin_base.admin_orgs`),
so the home page is scoped exactly like every other admin page.
"""

from __future__ import annotations

from typing import Any

from django import template

from platform_core.admin_base import admin_orgs
from platform_core.wiring import admin_dashboard

register = template.Library()


@register.simple_tag(takes_context=True)
def org_dashboard_cards(context: dict[str, Any]) -> list[admin_dashboard.OrgCard]:
    """The cards of the organisations the request's user administers ([] without a request)."""
    request = context.get("request")
    if request is None:
        return []
    return admin_dashboard.org_dashboard_cards(organizations=admin_orgs(request).order_by("name"))
