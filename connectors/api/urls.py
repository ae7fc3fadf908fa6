"""The connectors app's routes under ``/api/v1/orgs/<org_slug>/``."""

from __future__ import annotations

from django.urls import include, path
from rest_framework.routers import SimpleRouter

from connectors.api.views import ConnectorActionViewSet, ConnectorCallLogViewSet, ConnectorViewSet

router = SimpleRouter()
router.register("connectors", ConnectorViewSet, basename="connector")
router.register("call-logs", ConnectorCallLogViewSet, basename="call-log")

_actions = ConnectorActionViewSet.as_view({"get": "list", "post": "create"})
_action = ConnectorActionViewSet.as_view(
    {"get": "retrieve", "put": "update", "patch": "partial_update", "delete": "destroy"}
)

urlpatterns = [
    path("connectors/<uuid:connector_pk>/actions/", _actions, name="connector-action-list"),
    path("connectors/<uuid:connector_pk>/actions/<uuid:pk>/", _action, name="connector-action-detail"),
    path("", include(router.urls)),
]
