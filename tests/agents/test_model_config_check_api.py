"""``POST …/model-configs/<id>/check/`` answers with a report, never a 500 (security issue #31: the fuzzer
stored a key that no HTTP header can carry, and the check crashed encoding it)."""

from __future__ import annotations

import pytest

from agents.models import ModelConfig
from tests.agents.factories import ModelConfigFactory

pytestmark = pytest.mark.django_db

NOT_SENDABLE = ["sk-\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9", "sk-abc\ndefgh", "sk-with space"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        pytest.param("api_key", NOT_SENDABLE[0], id="key-not-latin-1"),
        pytest.param("api_key", NOT_SENDABLE[1], id="key-with-a-newline"),
        pytest.param("api_key", NOT_SENDABLE[2], id="key-with-a-space"),
        pytest.param("extra_headers", {"X-Gateway\n": "v"}, id="header-name-with-a-newline"),
        pytest.param("extra_headers", {"X-Gateway": "v\n"}, id="header-value-with-a-newline"),
        pytest.param("extra_headers", {"X-Team": "caf\u00e9"}, id="header-value-not-latin-1"),
    ],
)
def test_a_key_or_header_no_request_can_carry_is_refused_on_save(client_for, org, org_admin, field, value):
    response = client_for(org_admin).post(
        f"/api/v1/orgs/{org.slug}/model-configs/",
        {"name": "gw", "base_url": "https://llm.example.com/v1", "model": "m", field: value},
        format="json",
    )
    assert response.status_code == 400 and field in response.json()
    assert not ModelConfig.objects.unscoped().filter(organization=org).exists()


@pytest.mark.parametrize("key", NOT_SENDABLE)
def test_checking_a_stored_key_no_header_can_carry_reports_it_without_sending(
    client_for, org, org_admin, key, scripted_llm
):
    """A key stored before the rule (or through code) gets a report that names the key, not a 500."""
    config = ModelConfigFactory(organization=org, base_url=scripted_llm.base_url, api_key=key)
    response = client_for(org_admin).post(f"/api/v1/orgs/{org.slug}/model-configs/{config.pk}/check/")
    assert response.status_code == 200
    report = response.json()
    assert report["key_verified"] is False
    assert all(p["status"] == "not_checked" for p in report["probes"])
    assert "API key" in report["probes"][0]["message"]
    assert scripted_llm.requests == []


def test_checking_a_stored_header_no_request_can_carry_reports_it_without_sending(
    client_for, org, org_admin, scripted_llm
):
    config = ModelConfigFactory(
        organization=org, base_url=scripted_llm.base_url, extra_headers='{"X-Team": "caf\u00e9"}'
    )
    response = client_for(org_admin).post(f"/api/v1/orgs/{org.slug}/model-configs/{config.pk}/check/")
    assert response.status_code == 200
    assert all(p["status"] == "not_checked" for p in response.json()["probes"])
    assert "header" in response.json()["probes"][0]["message"]
    assert scripted_llm.requests == []
