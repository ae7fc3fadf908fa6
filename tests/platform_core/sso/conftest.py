"""Sign-in test harness: the fake Feishu (its OAuth side) and a loopback OpenID Connect provider,
configured as the deployment's providers, and a helper that walks a sign-in through them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

import pytest
import requests
from django.test import Client, override_settings

from platform_core.sso.providers import OIDCProviderConfig, socialaccount_providers
from tests.fakes.feishu_server import FAKE_APP_ID, FAKE_APP_SECRET, FakeFeishu
from tests.fakes.oidc_provider import FAKE_OIDC_CLIENT_ID, FAKE_OIDC_CLIENT_SECRET, FakeOIDCProvider
from tests.fakes.threaded_server import reset_around

OIDC_ID = "corp"
OIDC_NAME = "Corp SSO"


@pytest.fixture(scope="session")
def fake_oidc_server() -> Iterator[FakeOIDCProvider]:
    with FakeOIDCProvider() as server:
        yield server


@pytest.fixture
def fake_oidc(fake_oidc_server: FakeOIDCProvider) -> Iterator[FakeOIDCProvider]:
    yield from reset_around(fake_oidc_server)


def sso_provider_settings(feishu: FakeFeishu, oidc: FakeOIDCProvider) -> dict:
    return socialaccount_providers(
        feishu_app_id=FAKE_APP_ID,
        feishu_secret=FAKE_APP_SECRET,
        feishu_base_url=feishu.base_url,
        oidc=[
            OIDCProviderConfig(
                id=OIDC_ID,
                name=OIDC_NAME,
                server_url=oidc.address,
                client_id=FAKE_OIDC_CLIENT_ID,
                secret=FAKE_OIDC_CLIENT_SECRET,
            )
        ],
    )


@pytest.fixture
def sso(fake_feishu: FakeFeishu, fake_oidc: FakeOIDCProvider) -> Iterator[SSO]:
    """Both fakes as the deployment's sign-in providers (their loopback hosts are the operator's own)."""
    with override_settings(SOCIALACCOUNT_PROVIDERS=sso_provider_settings(fake_feishu, fake_oidc)):
        yield SSO(fake_feishu, fake_oidc)


@dataclass
class SSO:
    feishu: FakeFeishu
    oidc: FakeOIDCProvider

    def sign_in(self, client: Client, login_path: str) -> requests.Response | object:
        """Press a provider's button, let the provider consent, and follow its redirect back to us.

        Returns our callback's response (a redirect on success).
        """
        start = client.post(login_path)
        assert start.status_code == 302, start.content[:500]
        authorize = requests.get(start["Location"], allow_redirects=False, timeout=5)
        assert authorize.status_code == 302, authorize.text
        back = urlsplit(authorize.headers["Location"])
        assert back.netloc == "testserver"
        return client.get(f"{back.path}?{back.query}")

    def feishu_sign_in(self, client: Client) -> object:
        return self.sign_in(client, "/accounts/feishu/login/")

    def oidc_sign_in(self, client: Client) -> object:
        return self.sign_in(client, f"/accounts/oidc/{OIDC_ID}/login/")
