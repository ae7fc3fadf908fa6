"""The Feishu channel's admin pages: the change page shows the full callback URL (scheme, host, path) of
the saved channel with a copy button; the add page shows no made-up id and says the URL appears after
saving."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from platform_core.models import Role
from tests.factories import PASSWORD, member_of
from tests.hooks.factories import FeishuChannelFactory

pytestmark = pytest.mark.django_db

UUID_PATH = re.compile(r"/integrations/feishu/[0-9a-f-]{36}/callback/")


@pytest.fixture
def owner_client(client, org):
    owner = member_of(org, Role.OWNER, username="olga")
    assert client.login(username=owner.username, password=PASSWORD)
    return client


def test_the_change_page_shows_the_full_callback_url_with_a_copy_button(owner_client, org, settings):
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "platform.example.com"]
    channel = FeishuChannelFactory(organization=org)
    url = f"https://platform.example.com/integrations/feishu/{channel.pk}/callback/"
    page = owner_client.get(
        reverse("admin:hooks_feishuchannel_change", args=[channel.pk]),
        HTTP_HOST="platform.example.com",
        secure=True,
    ).content.decode()
    assert f'value="{url}"' in page
    assert re.search(r'<button[^>]*data-copy-target="callback-url"', page)
    assert "js/copy-button.js" in page
    assert UUID_PATH.findall(page) == [f"/integrations/feishu/{channel.pk}/callback/"]


def test_the_add_page_says_the_callback_url_appears_after_saving(owner_client):
    first = owner_client.get(reverse("admin:hooks_feishuchannel_add")).content.decode()
    second = owner_client.get(reverse("admin:hooks_feishuchannel_add")).content.decode()
    assert "The callback URL will appear here once the channel is saved." in first
    assert UUID_PATH.search(first) is None and UUID_PATH.search(second) is None
