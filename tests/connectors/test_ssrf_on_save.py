"""Connector URLs are checked by the SSRF guard when saved (API and admin go through ``full_clean``), the
OAuth2 token URL included; the connector's own allowed private hosts are the only way past it."""

from __future__ import annotations

import pytest

from connectors.models import Connector
from tests.connectors.ssrf_corpus import PRIVATE_URL_HOSTS

pytestmark = pytest.mark.django_db


def _connectors(org) -> str:
    return f"/api/v1/orgs/{org.slug}/connectors/"


def _oauth(token_url: str, **extra: object) -> dict[str, object]:
    return {
        "name": "erp",
        "base_url": "https://erp.example.com",
        "auth_type": "oauth2_client_credentials",
        "oauth_client_id": "client-id",
        "oauth_token_url": token_url,
        "auth_secret": "client-secret-value",
        **extra,
    }


@pytest.mark.parametrize("host", PRIVATE_URL_HOSTS)
def test_a_connector_base_url_on_a_private_address_is_refused_on_save(client_for, org_admin, org, host):
    response = client_for(org_admin).post(
        _connectors(org), {"name": "erp", "base_url": f"http://{host}/api"}, format="json"
    )

    assert response.status_code == 400, response.content
    assert "base_url" in response.json()
    assert not Connector.objects.exists()


@pytest.mark.parametrize("host", PRIVATE_URL_HOSTS)
def test_an_oauth_token_url_on_a_private_address_is_refused_on_save(client_for, org_admin, org, host):
    response = client_for(org_admin).post(_connectors(org), _oauth(f"http://{host}/token"), format="json")

    assert response.status_code == 400, response.content
    assert "oauth_token_url" in response.json()
    assert not Connector.objects.exists()


def test_the_connectors_allowed_private_hosts_let_its_token_url_through(client_for, org_admin, org, fake_dns):
    fake_dns["sso.internal.test"] = ["10.0.0.5"]
    body = _oauth("http://sso.internal.test/oauth/token")

    refused = client_for(org_admin).post(_connectors(org), body, format="json")
    allowed = client_for(org_admin).post(
        _connectors(org), {**body, "allowed_private_hosts": ["sso.internal.test"]}, format="json"
    )

    assert refused.status_code == 400 and "oauth_token_url" in refused.json()
    assert allowed.status_code == 201, allowed.content
