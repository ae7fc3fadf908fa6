"""Pages of the tenancy core: sign-in, sign-out and the home page listing the user's organisations."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from platform_core.models import Membership


@login_required
def home(request: HttpRequest) -> HttpResponse:
    memberships = (
        Membership.objects.filter(user=request.user)
        .select_related("organization")
        .order_by("organization__name")
    )
    return render(request, "platform_core/home.html", {"memberships": memberships})
