"""Routes of the Members page, included under ``o/<slug:org_slug>/members/``."""

from __future__ import annotations

from django.urls import path

from platform_core.pages import members as views

urlpatterns = [
    path("", views.members_page, name="members-page"),
    path("invite/", views.member_invite, name="members-invite"),
    path("add/", views.member_add_identity, name="members-add-identity"),
    path("<int:membership_id>/role/", views.member_set_role, name="members-set-role"),
    path("<int:membership_id>/remove/", views.member_remove, name="members-remove"),
    path("<int:membership_id>/feishu/", views.member_link_feishu, name="members-link-feishu"),
    path(
        "invitations/<int:invitation_id>/cancel/",
        views.member_cancel_invitation,
        name="members-cancel-invitation",
    ),
    path("join/<uidb64>/<token>/", views.MemberJoinView.as_view(), name="member-join"),
]
