"""Feishu channels go through the SSRF guard: a private base URL is refused on save (admin and API)
and nothing is posted to one at call time (the app secret's token request included), unless the
operator allows the host (``FEISHU_ALLOWED_PRIVATE_HOSTS``) or it is the operator's own
``FEISHU_BASE_URL``."""

from __future__ import annotations

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.urls import reverse

from hooks.feishu.client import FeishuApp, FeishuClient, aclose_shared_clients
from hooks.feishu.errors import FeishuError
from hooks.models import FeishuChannel
from tests.connectors.ssrf_corpus import PRIVATE_DNS_ANSWERS, PRIVATE_URL_HOSTS
from tests.hooks.admin_forms import feishu_channel_add_form
from tests.hooks.factories import FeishuChannelFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def no_private_hosts(settings):
    """The deployment allows no private Feishu host (the test suite's default allows loopback)."""
    settings.FEISHU_ALLOWED_PRIVATE_HOSTS = []
    return settings


def _api_body(base_url: str) -> dict[str, object]:
    return {
        "name": "approvals",
        "app_id": "cli_1",
        "app_secret": "s3cret-app-secret",
        "verification_token": "v-token-abc",
        "encrypt_key": "enc-key-value",
        "base_url": base_url,
    }


# --- on save ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("host", PRIVATE_URL_HOSTS)
def test_admin_refuses_a_feishu_channel_on_a_private_address(admin_client, org, no_private_hosts, host):
    response = admin_client.post(
        reverse("admin:hooks_feishuchannel_add"), feishu_channel_add_form(org, base_url=f"http://{host}")
    )

    assert response.status_code == 200
    assert "base_url" in response.context["adminform"].form.errors
    assert not FeishuChannel.objects.unscoped().exists()


@pytest.mark.parametrize("host", PRIVATE_URL_HOSTS)
def test_api_refuses_a_feishu_channel_on_a_private_address(client_for, admin, org, no_private_hosts, host):
    response = client_for(admin).post(
        f"/api/v1/orgs/{org.slug}/feishu-channels/", _api_body(f"http://{host}"), format="json"
    )

    assert response.status_code == 400, response.content
    assert "base_url" in response.json()
    assert not FeishuChannel.objects.unscoped().exists()


@pytest.mark.parametrize("name", sorted(PRIVATE_DNS_ANSWERS))
def test_api_refuses_a_feishu_channel_whose_name_resolves_to_a_private_address(
    client_for, admin, org, no_private_hosts, fake_dns, name
):
    fake_dns[name] = PRIVATE_DNS_ANSWERS[name]

    response = client_for(admin).post(
        f"/api/v1/orgs/{org.slug}/feishu-channels/", _api_body(f"https://{name}"), format="json"
    )

    assert response.status_code == 400, response.content
    assert "is refused" in str(response.json()["base_url"])
    assert not FeishuChannel.objects.unscoped().exists()


def test_a_blank_base_url_means_the_operators_feishu_and_is_accepted(
    client_for, admin, org, no_private_hosts
):
    response = client_for(admin).post(
        f"/api/v1/orgs/{org.slug}/feishu-channels/", _api_body(""), format="json"
    )

    assert response.status_code == 201, response.content


# --- at call time -----------------------------------------------------------------------------------


def test_send_a_test_card_to_a_private_base_url_posts_nothing(
    client_for, admin, org, fake_feishu, no_private_hosts
):
    channel = FeishuChannelFactory(organization=org, base_url=fake_feishu.base_url)  # saved without a check

    response = client_for(admin).post(f"/api/v1/orgs/{org.slug}/feishu-channels/{channel.pk}/test-card/")

    assert response.status_code == 502
    assert "blocked by the SSRF guard" in response.json()["error"]
    assert fake_feishu.requests == [] and fake_feishu.sent == []


def test_the_admin_test_card_action_to_a_name_resolving_to_loopback_posts_nothing(
    admin_client, org, fake_feishu
):
    port = fake_feishu.base_url.rsplit(":", 1)[1]  # the suite allows the literal 127.0.0.1, not this name
    channel = FeishuChannelFactory(organization=org, base_url=f"http://localhost:{port}")

    response = admin_client.post(
        reverse("admin:hooks_feishuchannel_changelist"),
        {"action": "send_test_card", ACTION_CHECKBOX_NAME: [str(channel.pk)]},
        follow=True,
    )

    assert "could not be sent" in response.content.decode()
    assert "blocked by the SSRF guard" in response.content.decode()
    assert fake_feishu.requests == []


def test_operator_allow_list_lets_a_channel_reach_a_private_feishu(
    client_for, admin, org, fake_feishu, settings
):
    channel = FeishuChannelFactory(organization=org, base_url=fake_feishu.base_url)
    test_card = f"/api/v1/orgs/{org.slug}/feishu-channels/{channel.pk}/test-card/"
    settings.FEISHU_ALLOWED_PRIVATE_HOSTS = []
    assert client_for(admin).post(test_card).status_code == 502

    settings.FEISHU_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    response = client_for(admin).post(test_card)

    assert response.status_code == 200 and response.json()["sent"] is True
    assert [m.chat_id for m in fake_feishu.sent] == ["oc_approvals"]


def test_the_operators_own_feishu_base_url_is_trusted(client_for, admin, org, fake_feishu, no_private_hosts):
    no_private_hosts.FEISHU_BASE_URL = fake_feishu.base_url
    channel = FeishuChannelFactory(organization=org, base_url="")

    response = client_for(admin).post(f"/api/v1/orgs/{org.slug}/feishu-channels/{channel.pk}/test-card/")

    assert response.status_code == 200 and response.json()["sent"] is True


async def test_the_client_refuses_a_loopback_feishu_without_the_allowance_and_sends_nothing(fake_feishu):
    app = FeishuApp(
        app_id=fake_feishu.app.app_id, app_secret=fake_feishu.app.app_secret, base_url=fake_feishu.base_url
    )

    with pytest.raises(
        FeishuError, match="blocked by the SSRF guard: 127.0.0.1 is a loopback address"
    ) as caught:
        await FeishuClient(app).tenant_access_token()

    assert not caught.value.retryable
    assert fake_feishu.requests == []
    await aclose_shared_clients()
