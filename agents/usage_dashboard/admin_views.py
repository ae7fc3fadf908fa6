"""The dashboard's admin pages: ``/admin/usage-dashboard/`` (the organisations the user administers),
``/admin/usage-dashboard/<slug>/`` (the page, its charts drawn by ``static/agents/usage-dashboard.js``
with the vendored Chart.js) and ``.../csv/<table>/`` (a table as a CSV file).

Each view is wrapped in ``admin.site.admin_view`` (staff sign-in, as every admin page); an organisation the
user does not administer is a 404, like a missing one.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.translation import gettext as _

from agents.usage_dashboard.csv_export import csv_tables, dashboard_csv
from agents.usage_dashboard.figures import dashboard_data, dashboard_figures
from agents.usage_dashboard.query import PERIODS, DashboardQuery, QueryRefused, dashboard_query_parse
from platform_core.models import Organization
from platform_core.tenancy.admin_orgs import admin_orgs
from platform_core.tenancy.time_zone import organization_time_zone_activate


def _admin_org(request: HttpRequest, slug: str) -> Organization:
    org = admin_orgs(request).filter(slug=slug).first()
    if org is None:
        raise Http404(_("No such organisation."))
    return org


def _chart_labels() -> dict[str, str]:
    """The words the page's script puts on its charts, in the page's language."""
    return {
        "prompt_tokens": _("Prompt tokens"),
        "completion_tokens": _("Completion tokens"),
        "total_tokens": _("Total tokens"),
        "cost": _("Cost"),
        "used_percent": _("Used (%)"),
        "no_data": _("No usage in this range."),
    }


def dashboard_chooser_view(request: HttpRequest) -> HttpResponse:
    """The organisations whose dashboard the user may open (straight to it when there is one)."""
    orgs = list(admin_orgs(request).order_by("name"))
    if len(orgs) == 1:
        return HttpResponseRedirect(reverse("usage-dashboard", kwargs={"org_slug": orgs[0].slug}))
    context = {**admin.site.each_context(request), "title": _("Usage and cost"), "organizations": orgs}
    return TemplateResponse(request, "admin/usage_dashboard_chooser.html", context)


def dashboard_view(request: HttpRequest, org_slug: str) -> HttpResponse:
    """The organisation's usage and cost over time, by user, agent and model endpoint, its costliest runs
    and its budgets' consumption."""
    org = _admin_org(request, org_slug)
    organization_time_zone_activate(org)  # the page's times read in the organisation's zone
    parsed = dashboard_query_parse(request.GET, organization=org)
    errors: dict[str, str] = {}
    if isinstance(parsed, QueryRefused):
        errors = parsed.errors
        parsed = dashboard_query_parse({}, organization=org)
    assert isinstance(parsed, DashboardQuery)
    figures = dashboard_figures(organization=org, query=parsed)
    data = dashboard_data(figures)
    context: dict[str, Any] = {
        **admin.site.each_context(request),
        "title": _("Usage and cost: %(org)s") % {"org": org.name},
        "organization": org,
        "figures": figures,
        "data": data,
        "chart_data": {**data, "labels": _chart_labels()},
        # the tables' rows with their times as datetimes, which the page formats (never raw ISO text)
        "top_runs": list(zip(figures.top_runs, data["top_runs"], strict=True)),
        "budgets": list(zip(figures.budgets, data["budgets"], strict=True)),
        "errors": errors,
        "periods": [(p, label) for p, label in zip(PERIODS, (_("Day"), _("Week"), _("Month")), strict=True)],
        "query_string": f"?period={parsed.period}&from={parsed.first.isoformat()}&to={parsed.last.isoformat()}",
    }
    return TemplateResponse(request, "admin/usage_dashboard.html", context)


def dashboard_csv_view(request: HttpRequest, org_slug: str, table: str) -> HttpResponse:
    """One of the page's tables (same query parameters) as a CSV download."""
    org = _admin_org(request, org_slug)
    if table not in csv_tables():
        raise Http404(_("No such table."))
    parsed = dashboard_query_parse(request.GET, organization=org)
    if isinstance(parsed, QueryRefused):
        return HttpResponseBadRequest("; ".join(f"{k}: {v}" for k, v in parsed.errors.items()))
    figures = dashboard_figures(organization=org, query=parsed)
    response = HttpResponse(
        dashboard_csv(figures=figures, table=table), content_type="text/csv; charset=utf-8"
    )
    name = f"usage-{org.slug}-{table}-{parsed.first.isoformat()}-{parsed.last.isoformat()}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


# Mounted at ``admin/usage-dashboard/`` by the root URL configuration, before the admin site's own URLs.
urlpatterns = [
    path("", admin.site.admin_view(dashboard_chooser_view), name="usage-dashboard-chooser"),
    path("<slug:org_slug>/", admin.site.admin_view(dashboard_view), name="usage-dashboard"),
    path(
        "<slug:org_slug>/csv/<str:table>/",
        admin.site.admin_view(dashboard_csv_view),
        name="usage-dashboard-csv",
    ),
]
