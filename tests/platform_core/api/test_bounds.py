"""The REST API bounds what it reads before a parser or a query sees it (security issue #31): pages, JSON
size and nesting. Each of these answered 500 once (Schemathesis found them); now each is a 400 or a
bounded page. The schema is valid OpenAPI 3 whatever the deployment configures."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings
from openapi_spec_validator import validate

from platform_core.api.pagination import MAX_PAGE_SIZE
from platform_core.api.parsers import MAX_JSON_DEPTH
from platform_core.models import Role
from platform_core.sso.providers import socialaccount_providers
from tests.agents.factories import ModelConfigFactory
from tests.factories import OrganizationFactory, member_of
from tests.hooks.factories import FeishuChannelFactory

pytestmark = pytest.mark.django_db

# Beyond SQLite's 64-bit integers (its "datatype mismatch") and PostgreSQL's bigint alike.
HUGE = "74084672405301725161307303685593759744"


def nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


@pytest.mark.parametrize(
    "route", ["/api/v1/orgs/", "/api/v1/api-keys/", "feishu-channels/", "model-configs/", "audit-logs/"]
)
def test_a_huge_limit_gets_a_bounded_page_not_a_server_error(client_for, org, org_admin, route):
    FeishuChannelFactory(organization=org)
    ModelConfigFactory(organization=org)
    url = route if route.startswith("/") else f"/api/v1/orgs/{org.slug}/{route}"
    response = client_for(org_admin).get(url, {"limit": HUGE, "offset": "0"})
    assert response.status_code == 200
    assert len(response.json()["results"]) <= MAX_PAGE_SIZE


def test_the_page_size_is_capped(client_for, org_admin):
    for n in range(3):
        member_of(OrganizationFactory(slug=f"o{n}"), Role.MEMBER, username=f"u{n}")
        member_of(OrganizationFactory(slug=f"p{n}"), Role.ADMIN, username=org_admin.username)
    response = client_for(org_admin).get("/api/v1/orgs/", {"limit": "2"})
    assert response.json()["next"] and len(response.json()["results"]) == 2
    assert MAX_PAGE_SIZE >= 200  # the chat page asks for 200 messages at a time (static/js/chat.js)


def test_a_huge_offset_is_an_empty_page(client_for, org, org_admin):
    response = client_for(org_admin).get(f"/api/v1/orgs/{org.slug}/audit-logs/", {"offset": HUGE})
    assert response.status_code == 200 and response.json()["results"] == []


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 5000, 100_000])
def test_deeply_nested_json_is_a_400_on_any_drf_endpoint(client_for, org, org_admin, depth):
    client = client_for(org_admin)
    for method, url in (
        ("PATCH", f"/api/v1/orgs/{org.slug}/settings/"),
        ("POST", f"/api/v1/orgs/{org.slug}/agents/"),
        ("POST", "/v1/chat/completions"),
    ):
        response = client.generic(method, url, nested(depth), content_type="application/json")
        assert response.status_code == 400, (url, response.status_code)
        assert "nested" in json.dumps(response.json())


def test_json_nested_within_the_bound_is_parsed(client_for, org, org_admin):
    body = json.dumps(
        {"read_only": True, "read_only_reason": "x", "extra": json.loads(nested(MAX_JSON_DEPTH - 1))}
    )
    response = client_for(org_admin).generic(
        "PATCH", f"/api/v1/orgs/{org.slug}/settings/", body, content_type="application/json"
    )
    assert response.status_code == 200 and response.json()["read_only"] is True


def test_brackets_inside_strings_do_not_count_as_nesting(client_for, org, org_admin):
    reason = "[{" * 5000 + '\\"' + "]}" * 10
    body = '{"read_only": true, "read_only_reason": "' + reason[:200] + '"}'
    response = client_for(org_admin).generic(
        "PATCH", f"/api/v1/orgs/{org.slug}/settings/", body, content_type="application/json"
    )
    assert response.status_code == 200, response.json()


@override_settings(API_MAX_JSON_BYTES=1024)
def test_an_oversized_json_body_is_a_413(client_for, org, org_admin):
    body = json.dumps({"read_only": True, "read_only_reason": "x" * 2000})
    response = client_for(org_admin).generic(
        "PATCH", f"/api/v1/orgs/{org.slug}/settings/", body, content_type="application/json"
    )
    assert response.status_code == 413
    org.refresh_from_db()
    assert org.read_only is False


@pytest.mark.parametrize("method", ["put", "patch"])
def test_sign_in_settings_without_a_value_are_a_400(client_for, org, org_owner, method):
    response = getattr(client_for(org_owner), method)(
        f"/api/v1/orgs/{org.slug}/sign-in-settings/", {}, format="json"
    )
    assert response.status_code == 400
    assert "password_login" in response.json()


@override_settings(SOCIALACCOUNT_PROVIDERS={})
def test_the_schema_is_valid_openapi_3_without_a_sign_in_provider(client_for, member):
    response = client_for(member).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = json.loads(response.content)
    validate(schema)
    rule = schema["components"]["schemas"]["SignInRule"]["properties"]["provider"]
    assert "enum" not in json.dumps(rule) or rule.get("enum")


def test_the_schema_names_the_configured_providers_as_an_enum(client_for, member):
    providers = socialaccount_providers(
        feishu_app_id="cli_sso",
        feishu_secret="sso-secret-value",
        feishu_base_url="https://open.feishu.cn",
        oidc=[],
    )
    with override_settings(SOCIALACCOUNT_PROVIDERS=providers):
        response = client_for(member).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    schema = json.loads(response.content)
    validate(schema)
    assert "feishu" in json.dumps(
        schema["components"]["schemas"]["SignInRule"]["properties"]["provider"]
    ) or ("feishu" in json.dumps(schema["components"]["schemas"].get("ProviderEnum", {})))
