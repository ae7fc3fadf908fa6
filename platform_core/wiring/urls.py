"""The root URL configuration: the tenancy core's pages and every app's routes."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.i18n import JavaScriptCatalog
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from agents.api.urls import openai_urlpatterns  # chat over HTTP (issue 20)
from hooks.urls import inbox_urlpatterns, integration_urlpatterns  # guard rails (issue 6)
from platform_core.pages import views
from platform_core.sso.login import SignInView  # single sign-on (issue 20)
from platform_core.wiring.docs_site import docs_home, docs_page  # the documentation site (issue 32)

urlpatterns = [
    path("", views.home, name="home"),
    # Browsers ask every site for /favicon.ico, the admin's pages included.
    path("favicon.ico", views.favicon),
    path("api-keys/", views.api_keys, name="api-keys"),
    path("api-keys/<int:key_id>/revoke/", views.api_key_revoke_page, name="api-key-revoke"),
    path("login/", SignInView.as_view(), name="login"),
    path("accounts/", include("platform_core.sso.urls")),  # single sign-on (issue 20)
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("i18n/", include("django.conf.urls.i18n")),
    path("jsi18n/", JavaScriptCatalog.as_view(), name="javascript-catalog"),
    path("o/<slug:org_slug>/members/", include("platform_core.pages.members_urls")),  # issue 20
    path("invitations/", include("platform_core.pages.invitations_urls")),  # invitations (issue 31)
    path("o/<slug:org_slug>/", include("agents.urls")),
    path("o/<slug:org_slug>/approvals/", include(inbox_urlpatterns)),  # guard rails (issue 6)
    path("integrations/", include(integration_urlpatterns)),  # guard rails (issue 6)
    path(
        "admin/usage-dashboard/", include("agents.usage_dashboard.admin_views")
    ),  # usage dashboard (issue 21)
    path("admin/", admin.site.urls),
    path("demo-api/", include("connectors.demo.api.urls")),  # connectors (issue 4)
    path("api/v1/", include("platform_core.wiring.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # Swagger UI with its script in a file (the CSP allows no inline script), its assets from the sidecar.
    path(
        "api/schema/swagger-ui/",
        SpectacularSwaggerSplitView.as_view(url_name="api-schema"),
        name="api-schema-swagger-ui",
    ),
    path("docs/", docs_home, name="docs"),  # the documentation site (issue 32)
    path("docs/<str:language>/", docs_page, name="docs-page"),
    path("docs/<str:language>/<path:path>", docs_page, name="docs-page"),
    path("v1/", include(openai_urlpatterns)),  # the OpenAI-compatible endpoint (issue 20)
]
