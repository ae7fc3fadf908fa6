"""The tenancy core's ``/api/v1/`` routes: the organisation list, and its settings, audit log, members,
member groups and API keys; the caller's personal API keys.

The project wiring (:mod:`platform_core.wiring.api_urls`) mounts them with every app's own routes.
"""

from __future__ import annotations

from django.urls import include, path
from rest_framework.routers import SimpleRouter

from platform_core.api.groups import MemberGroupViewSet  # member groups (issue 34)
from platform_core.api.keys import OrgApiKeyViewSet, PersonalApiKeyViewSet
from platform_core.api.members import MemberInvitationViewSet, MemberViewSet
from platform_core.api.sign_in import SignInRuleViewSet, SignInSettingsView  # single sign-on (issue 20)
from platform_core.api.views import AuditLogViewSet, OrganizationListView, OrganizationSettingsView

org_router = SimpleRouter()
org_router.register("audit-logs", AuditLogViewSet, basename="audit-log")
org_router.register("members", MemberViewSet, basename="member")
org_router.register("member-invitations", MemberInvitationViewSet, basename="member-invitation")  # issue 31
org_router.register("groups", MemberGroupViewSet, basename="member-group")  # issue 34
org_router.register("sign-in-rules", SignInRuleViewSet, basename="sign-in-rule")  # issue 20
org_router.register("api-keys", OrgApiKeyViewSet, basename="org-api-key")

personal_router = SimpleRouter()
personal_router.register("api-keys", PersonalApiKeyViewSet, basename="api-key")

# Under ``orgs/<org_slug>/``.
org_urlpatterns = [
    path("settings/", OrganizationSettingsView.as_view(), name="org-settings"),
    path("sign-in-settings/", SignInSettingsView.as_view(), name="sign-in-settings"),  # issue 20
    path("", include(org_router.urls)),
]

# Outside any organisation.
urlpatterns = [
    path("orgs/", OrganizationListView.as_view(), name="org-list"),
    path("", include(personal_router.urls)),  # the caller's personal API keys
]
