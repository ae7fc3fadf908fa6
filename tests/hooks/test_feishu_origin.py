"""The operator's ``FEISHU_BASE_URL`` is trusted as an origin (scheme, host and port), not as a host on every
port (security issue #31): an org admin cannot aim a channel at another port of the operator's Feishu host,
on save or at call time; the operator's own origin (a blank base URL, or the same origin spelled out) is
still trusted, as model endpoints trust only their default endpoint."""

from __future__ import annotations

import pytest

from hooks.feishu_guard import feishu_allowed_private_hosts
from hooks.models import FeishuChannel
from tests.hooks.factories import FeishuChannelFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator_feishu(settings, fake_feishu):
    """The operator's Feishu is the fake, on loopback; no other private host is allowed."""
    settings.FEISHU_ALLOWED_PRIVATE_HOSTS = []
    settings.FEISHU_BASE_URL = fake_feishu.base_url
    return fake_feishu


def _other_port(base_url: str) -> str:
    host, port = base_url.rsplit(":", 1)
    return f"{host}:{int(port) + 1 if int(port) < 65535 else int(port) - 1}"


def _body(base_url: str) -> dict[str, str]:
    return {"name": "ops", "app_id": "cli_1", "app_secret": "s3cret-app-secret", "base_url": base_url}


def test_another_port_of_the_operators_feishu_host_is_refused_on_save(
    client_for, admin, org, operator_feishu
):
    response = client_for(admin).post(
        f"/api/v1/orgs/{org.slug}/feishu-channels/",
        _body(_other_port(operator_feishu.base_url)),
        format="json",
    )

    assert response.status_code == 400, response.content
    assert "is refused" in str(response.json()["base_url"])
    assert not FeishuChannel.objects.unscoped().exists()


@pytest.mark.parametrize("spelling", ["{url}", "{url}/", "{url}/open-apis"])
def test_the_operators_origin_spelled_out_is_accepted(client_for, admin, org, operator_feishu, spelling):
    url = spelling.format(url=operator_feishu.base_url)
    response = client_for(admin).post(f"/api/v1/orgs/{org.slug}/feishu-channels/", _body(url), format="json")

    assert response.status_code == 201, response.content


def test_a_test_card_to_another_port_of_the_operators_host_posts_nothing(
    client_for, admin, org, operator_feishu
):
    channel = FeishuChannelFactory(
        organization=org, base_url=_other_port(operator_feishu.base_url)
    )  # no check

    response = client_for(admin).post(f"/api/v1/orgs/{org.slug}/feishu-channels/{channel.pk}/test-card/")

    assert response.json()["sent"] is False
    assert "blocked by the SSRF guard" in response.json()["error"]


def test_a_test_card_on_the_operators_origin_is_sent(client_for, admin, org, operator_feishu):
    channel = FeishuChannelFactory(organization=org, base_url="")

    response = client_for(admin).post(f"/api/v1/orgs/{org.slug}/feishu-channels/{channel.pk}/test-card/")

    assert response.status_code == 200 and response.json()["sent"] is True


@pytest.mark.parametrize(
    ("operator", "channel", "trusted"),
    [
        ("https://open.feishu.cn", "https://open.feishu.cn:443/", True),
        ("https://open.feishu.cn", "http://open.feishu.cn", False),
        ("https://open.feishu.cn", "https://open.feishu.cn:8443", False),
        ("http://10.0.0.5:8080", "http://10.0.0.5:8080/x", True),
        ("http://10.0.0.5:8080", "http://10.0.0.5", False),
        ("http://10.0.0.5:8080", "", True),
    ],
)
def test_the_operators_host_is_allowed_only_on_its_origin(settings, operator, channel, trusted):
    settings.FEISHU_ALLOWED_PRIVATE_HOSTS = []
    settings.FEISHU_BASE_URL = operator

    allowed = feishu_allowed_private_hosts(channel)

    host = operator.split("//")[1].split(":")[0]
    assert (host in allowed) is trusted
