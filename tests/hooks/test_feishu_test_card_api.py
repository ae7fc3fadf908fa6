"""``POST …/feishu-channels/<id>/test-card/``: a channel that cannot send a test card (no default chat, which
a form that leaves the field out saves) is the client's to fix: 400, not a 5xx (security issue #31)."""

from __future__ import annotations

import pytest

from platform_core.models import Role
from tests.factories import member_of

pytestmark = pytest.mark.django_db


def test_a_channel_saved_from_a_form_without_a_default_chat_answers_its_test_card_with_a_400(
    client_for, org, fake_feishu
):
    client = client_for(member_of(org, Role.ADMIN, username="ada"))
    created = client.post(
        f"/api/v1/orgs/{org.slug}/feishu-channels/",
        {
            "name": "form",
            "app_id": "cli_1",
            "app_secret": "s3cret-app-secret",
            "base_url": fake_feishu.base_url,
        },
        format="multipart",
    )
    assert created.status_code == 201, created.content

    response = client.post(f"/api/v1/orgs/{org.slug}/feishu-channels/{created.json()['id']}/test-card/")

    assert response.status_code == 400
    assert response.json()["sent"] is False and "default chat" in response.json()["error"]
    assert fake_feishu.requests == []
