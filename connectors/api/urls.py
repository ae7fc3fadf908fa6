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
_confirm_read = ConnectorActionViewSet.as_view(
    {"post": "confirm_read", "delete": "confirm_read"}, **ConnectorActionViewSet.confirm_read.kwargs
)

urlpatterns = [
    path("connectors/<uuid:connector_pk>/actions/", _actions, name="connector-action-list"),
    path("connectors/<uuid:connector_pk>/actions/<uuid:pk>/", _action, name="connector-action-detail"),
    path(
        "connectors/<uuid:connector_pk>/actions/<uuid:pk>/confirm-read/",
        _confirm_read,
        name="connector-action-confirm-read",
    ),
    path("", include(router.urls)),
]
