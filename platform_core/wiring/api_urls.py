"""``/api/v1/``: the tenancy core's routes and every app's, each app's org-scoped ones under
``orgs/<org_slug>/`` from its own module."""

from __future__ import annotations

from django.urls import include, path

from agents.api import urls as agents_api_urls
from platform_core.api import urls as core_api_urls

org_urlpatterns = [
    *core_api_urls.org_urlpatterns,
    path("", include("connectors.api.urls")),  # connectors (issue 4)
    path("", include("agents.api.urls")),
    path("", include("hooks.api.urls")),  # guard rails and approvals (issue 6)
]

urlpatterns = [
    *core_api_urls.urlpatterns,
    *agents_api_urls.public_urlpatterns,  # model-presets/ (outside any organisation)
    path("orgs/<slug:org_slug>/", include(org_urlpatterns)),
]
