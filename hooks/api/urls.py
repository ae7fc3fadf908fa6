"""The guard rails' org-scoped API routes (mounted under ``/api/v1/orgs/<org_slug>/``)."""

from __future__ import annotations

from django.urls import include, path
from rest_framework.routers import SimpleRouter

from hooks.api.views import (
    AgentHookSettingsViewSet,
    ApprovalPolicyViewSet,
    ApprovalViewSet,
    FeishuChannelViewSet,
    RateLimitViewSet,
)

router = SimpleRouter()
router.register("approvals", ApprovalViewSet, basename="approval")
router.register("approval-policies", ApprovalPolicyViewSet, basename="approval-policy")
router.register("feishu-channels", FeishuChannelViewSet, basename="feishu-channel")
router.register("rate-limits", RateLimitViewSet, basename="rate-limit")
router.register("agent-hook-settings", AgentHookSettingsViewSet, basename="agent-hook-settings")

urlpatterns = [path("", include(router.urls))]
