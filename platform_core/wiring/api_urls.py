"""``/api/v1/``: the tenancy core's routes and every app's, each app's org-scoped ones under
``orgs/<org_slug>/`` from its own module."""

from __future__ import annotations

from django.urls import include, path

from platform_core.api import urls as core_api_urls

org_urlpatterns = [
    *core_api_urls.org_urlpatterns,
    path("", include("connectors.api.urls")),  # connectors (issue 4)
    path("", include("agents.api.urls")),
    path("", include("hooks.api.urls")),  # guard rails and approvals (issue 6)
]

urlpatterns = [
    *core_api_urls.urlpatterns,
    path("orgs/<slug:org_slug>/", include(org_urlpatterns)),
]
