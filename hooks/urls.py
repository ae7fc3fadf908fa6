"""Web routes of the approval machinery.

``integration_urlpatterns`` are mounted under ``integrations/`` (the Feishu callback, no session) and
``inbox_urlpatterns`` under ``o/<slug:org_slug>/approvals/`` (the approvers' inbox) by
``platform_core.wiring.urls``.
"""

from __future__ import annotations

from django.urls import path

from hooks import views

integration_urlpatterns = [
    path("feishu/<uuid:channel_id>/callback/", views.feishu_callback, name="feishu-callback"),
]

inbox_urlpatterns = [
    path("", views.approvals_inbox, name="approvals-inbox"),
    path("<uuid:approval_id>/", views.approval_page, name="approvals-inbox-detail"),
    path("<uuid:approval_id>/decide/", views.approval_decide_page, name="approvals-inbox-decide"),
]
