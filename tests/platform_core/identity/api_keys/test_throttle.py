"""Failed API keys are throttled per client address on every entry point that accepts keys (REST, HTTP
chat, the OpenAI-compatible endpoint, MCP, the chat pages; the websocket in ``test_ws_auth``):
429 with ``Retry-After`` past the limit, whatever key the address sends then. Good keys are not slowed,
other addresses are not affected, and behind a trusted proxy the forwarded client is what counts."""

from __future__ import annotations

import httpx
import pytest
from django.test import Client, override_settings
from rest_framework.test import APIClient

from agents.mcp_endpoint.caller import CallerRefused, caller_admit
from agents.mcp_endpoint.http import AgentsMcpApp
from platform_core.identity.api_keys.keys import api_key_create
from platform_core.models import Role
from platform_core.request_meta import client_ip, client_ip_from_scope
from tests.agents.factories import AgentFactory
from tests.factories import member_of

pytestmark = pytest.mark.django_db

WRONG = "apt_" + "x" * 43
LIMIT = 20  # the embedded default of API_KEY_FAILURES_PER_ADDRESS


@pytest.fixture
def good_key(org):
    mia = member_of(org, Role.MEMBER, username="mia")
    AgentFactory(organization=org, name="Helper")
    return api_key_create(name="k", scopes=["read", "chat"], owner=mia, actor=mia).raw


def _api(raw: str, ip: str = "198.51.100.7", **extra) -> APIClient:
    client = APIClient(REMOTE_ADDR=ip, **extra)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def test_three_hundred_wrong_keys_in_a_row_are_throttled_with_retry_after(org):
    client = _api(WRONG)
    statuses = [client.get(f"/api/v1/orgs/{org.slug}/agents/").status_code for _ in range(300)]
    assert statuses[:LIMIT] == [401] * LIMIT
    assert set(statuses[LIMIT:]) == {429}
    refused = client.get(f"/api/v1/orgs/{org.slug}/agents/")
    assert 0 < int(refused["Retry-After"]) <= 600
    assert "retry in" in refused.json()["detail"]


def test_a_throttled_address_is_refused_even_with_a_good_key_and_other_addresses_are_not(org, good_key):
    for _ in range(LIMIT):
        _api(WRONG).get("/api/v1/orgs/")
    assert _api(good_key).get(f"/api/v1/orgs/{org.slug}/agents/").status_code == 429
    assert _api(good_key, ip="198.51.100.8").get(f"/api/v1/orgs/{org.slug}/agents/").status_code == 200


def test_good_keys_are_never_slowed(org, good_key):
    client = _api(good_key)
    statuses = {client.get(f"/api/v1/orgs/{org.slug}/agents/").status_code for _ in range(3 * LIMIT)}
    assert statuses == {200}


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/v1/models"),  # the OpenAI-compatible endpoint
        ("post", "/v1/chat/completions"),
        ("post", "/api/v1/orgs/acme/conversations/"),  # the HTTP chat
        ("get", "/api/v1/api-keys/"),  # outside any organisation
    ],
)
def test_every_http_route_that_takes_keys_is_throttled(org, method, path):
    client = _api(WRONG)
    for _ in range(LIMIT):
        assert getattr(client, method)(path, {}, format="json").status_code == 401
    refused = getattr(client, method)(path, {}, format="json")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0


def test_the_chat_pages_count_and_refuse_wrong_keys_by_address(org, good_key):
    client = Client(REMOTE_ADDR="198.51.100.7", HTTP_AUTHORIZATION=f"Bearer {WRONG}")
    for _ in range(LIMIT):
        assert client.get(f"/o/{org.slug}/chat/").status_code == 302  # to sign-in, as without a key
    refused = Client(REMOTE_ADDR="198.51.100.7", HTTP_AUTHORIZATION=f"Bearer {good_key}").get(
        f"/o/{org.slug}/chat/"
    )
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0


def test_the_mcp_endpoint_is_throttled(org, good_key):
    for _ in range(LIMIT):
        refused = caller_admit(raw_key=WRONG, organization_slug=org.slug, ip_address="198.51.100.7")
        assert isinstance(refused, CallerRefused) and refused.status == 401
    throttled = caller_admit(raw_key=good_key, organization_slug=org.slug, ip_address="198.51.100.7")
    assert isinstance(throttled, CallerRefused) and throttled.status == 429
    assert throttled.retry_after is not None and throttled.retry_after > 0


@override_settings(TRUST_X_FORWARDED_FOR=True)
def test_behind_a_trusted_proxy_each_forwarded_client_is_counted_apart(org, good_key):
    for _ in range(LIMIT):
        _api(WRONG, ip="10.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.5").get("/api/v1/orgs/")
    via_proxy = _api(good_key, ip="10.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.6")
    assert via_proxy.get(f"/api/v1/orgs/{org.slug}/agents/").status_code == 200
    guesser = _api(good_key, ip="10.0.0.1", HTTP_X_FORWARDED_FOR="203.0.113.5")
    assert guesser.get(f"/api/v1/orgs/{org.slug}/agents/").status_code == 429


@override_settings(API_KEY_FAILURES_PER_ADDRESS=3, API_KEY_FAILURE_WINDOW_SECONDS=60)
def test_the_limit_and_window_follow_the_settings(org):
    client = _api(WRONG)
    assert [client.get("/api/v1/orgs/").status_code for _ in range(4)] == [401, 401, 401, 429]
    assert 0 < int(client.get("/api/v1/orgs/")["Retry-After"]) <= 60


@pytest.mark.django_db(transaction=True)
async def test_the_mcp_http_endpoint_answers_429_with_retry_after():
    app = AgentsMcpApp(host=None)  # never reached: every call here is refused before the MCP server
    transport = httpx.ASGITransport(app=app, client=("198.51.100.7", 4000))
    headers = {"Authorization": f"Bearer {WRONG}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        for _ in range(LIMIT):
            assert (await client.post("/mcp/orgs/acme/", headers=headers, json={})).status_code == 401
        refused = await client.post("/mcp/orgs/acme/", headers=headers, json={})
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0
    assert refused.json()["error"] == "rate_limited"


def test_sockets_and_mcp_take_the_client_address_as_http_does():
    scope = {"client": ("10.0.0.1", 4000), "headers": [(b"x-forwarded-for", b"203.0.113.5, 10.0.0.1")]}
    meta = {"REMOTE_ADDR": "10.0.0.1", "HTTP_X_FORWARDED_FOR": "203.0.113.5, 10.0.0.1"}
    request = type("Request", (), {"META": meta})()
    for trusted, expected in ((False, "10.0.0.1"), (True, "203.0.113.5")):
        with override_settings(TRUST_X_FORWARDED_FOR=trusted):
            assert client_ip_from_scope(scope) == client_ip(request) == expected
