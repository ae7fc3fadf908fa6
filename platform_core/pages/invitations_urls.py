"""Routes of the signed-in person's invitations, included under ``invitations/`` (issue 31)."""

from __future__ import annotations

from django.urls import path

from platform_core.pages import invitations as views

urlpatterns = [
    path("", views.invitations_page, name="invitations"),
    path("<int:invitation_id>/accept/", views.invitation_accept, name="invitation-accept"),
    path("<int:invitation_id>/decline/", views.invitation_decline, name="invitation-decline"),
]
