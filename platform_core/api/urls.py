"""``/api/v1/``: the tenancy core's routes. Each app adds its own under ``orgs/<org_slug>/``."""

from __future__ import annotations

from django.urls import include, path
from rest_framework.routers import SimpleRouter

from platform_core.api.members import MemberViewSet
from platform_core.api.views import AuditLogViewSet, OrganizationListView, OrganizationSettingsView

org_router = SimpleRouter()
org_router.register("audit-logs", AuditLogViewSet, basename="audit-log")
org_router.register("members", MemberViewSet, basename="member")

# Every app's org-scoped API routes, each in its own module.
org_urlpatterns = [
    path("settings/", OrganizationSettingsView.as_view(), name="org-settings"),
    path("", include(org_router.urls)),
    path("", include("connectors.api.urls")),  # connectors (issue 4)
    path("", include("agents.api.urls")),
    path("", include("hooks.api.urls")),  # guard rails and approvals (issue 6)
]

urlpatterns = [
    path("orgs/", OrganizationListView.as_view(), name="org-list"),
    path("orgs/<slug:org_slug>/", include(org_urlpatterns)),
]
