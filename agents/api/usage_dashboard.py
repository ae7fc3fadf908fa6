"""``GET /api/v1/orgs/<slug>/usage/``: the usage dashboard's figures (org admins only)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import permissions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents.usage_dashboard.figures import dashboard_data, dashboard_figures
from agents.usage_dashboard.query import GROUP_BYS, PERIODS, QueryRefused, dashboard_query_parse
from platform_core.tenancy.scoping import IsOrgAdmin, IsOrgMember, OrgScopedViewMixin


class UsageFiguresSerializer(serializers.Serializer):
    currency = serializers.CharField(help_text="The rows' currency; empty for endpoints without prices.")
    calls = serializers.IntegerField()
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    cached_tokens = serializers.IntegerField()
    reasoning_tokens = serializers.IntegerField()
    total_tokens = serializers.IntegerField()
    cost = serializers.CharField(allow_null=True, help_text="A decimal string; null without prices.")


class UsageBucketSerializer(UsageFiguresSerializer):
    bucket = serializers.DateField(help_text="The first day of the day, week (Monday) or month.")


class UsageGroupSerializer(UsageFiguresSerializer):
    key = serializers.CharField(allow_null=True, help_text="The user's, agent's or endpoint's id.")
    label = serializers.CharField()


class UsageRunSerializer(UsageFiguresSerializer):
    run_id = serializers.UUIDField()
    agent = serializers.CharField()
    user = serializers.CharField()
    started_at = serializers.DateTimeField()


class BudgetConsumptionSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    scope = serializers.CharField()
    subject = serializers.CharField()
    metric = serializers.CharField()
    period = serializers.CharField()
    period_start = serializers.DateTimeField()
    used = serializers.CharField()
    limit = serializers.CharField()
    currency = serializers.CharField()
    percent = serializers.FloatField(allow_null=True)
    active = serializers.BooleanField()


class UsageDashboardSerializer(serializers.Serializer):
    period = serializers.ChoiceField(choices=PERIODS)
    # "from" is a Python keyword, so get_fields() adds that field by name.
    to = serializers.DateField()
    time_zone = serializers.CharField()
    group_by = serializers.ChoiceField(choices=GROUP_BYS)
    totals = UsageFiguresSerializer(many=True, help_text="One row per currency.")
    over_time = UsageBucketSerializer(many=True, help_text="One row per bucket and currency, oldest first.")
    groups = UsageGroupSerializer(many=True, help_text="By group_by, most tokens first.")
    by_user = UsageGroupSerializer(many=True)
    by_agent = UsageGroupSerializer(many=True)
    by_model_endpoint = UsageGroupSerializer(many=True)
    top_runs = UsageRunSerializer(many=True, help_text="The ten costliest runs.")
    budgets = BudgetConsumptionSerializer(many=True, help_text="Each budget in its current period.")

    def get_fields(self) -> dict[str, Any]:
        fields = super().get_fields()
        return {"period": fields.pop("period"), "from": serializers.DateField(), **fields}


class UsageDashboardView(OrgScopedViewMixin, APIView):
    """The organisation's token usage and cost over time, by user, agent and model endpoint, its costliest
    runs and its budgets' consumption."""

    permission_classes = [permissions.IsAuthenticated, IsOrgMember, IsOrgAdmin]

    @extend_schema(
        operation_id="orgs_usage_retrieve",
        parameters=[
            OpenApiParameter("period", str, enum=list(PERIODS), description="Bucket size (default day)."),
            OpenApiParameter("from", str, description="First day, YYYY-MM-DD (default 29 days before to)."),
            OpenApiParameter("to", str, description="Last day, YYYY-MM-DD, inclusive (default today)."),
            OpenApiParameter(
                "group_by", str, enum=list(GROUP_BYS), description="The breakdown in groups (default user)."
            ),
        ],
        responses={200: UsageDashboardSerializer},
    )
    def get(self, request: Request, org_slug: str) -> Response:
        parsed = dashboard_query_parse(request.query_params, organization=self.org)
        if isinstance(parsed, QueryRefused):
            return Response(parsed.errors, status=400)
        return Response(dashboard_data(dashboard_figures(organization=self.org, query=parsed)))
