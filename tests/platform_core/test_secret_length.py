"""Secrets shorter than a safe length are refused when saved (issue #14, Low): every place an org admin saves a
secret (connector credentials and DSN passwords, model API keys, Feishu app credentials), in the admin and
in the API. Redaction ignores shorter values, so a one-character secret could neither mangle messages nor
reveal itself by what was replaced. Add new secret inputs to the corpora below.
"""

from __future__ import annotations

import pytest

from agents.admin import ModelConfigForm
from connectors.forms import ConnectorAdminForm
from connectors.scrub import scrub
from hooks.admin import FeishuChannelForm
from platform_core.secret_rules import MIN_SECRET_LENGTH
from tests.factories import ConnectorFactory

pytestmark = pytest.mark.django_db

SHORT = "x" * (MIN_SECRET_LENGTH - 1)
LONG_ENOUGH = "k" * MIN_SECRET_LENGTH


def _connector_form(org, **secret):
    data = {
        "organization": org.pk,
        "name": "crm",
        "kind": "http",
        "base_url": "https://crm.example.com/api",
        "idempotency_header": "Idempotency-Key",
        "auth_type": "bearer",
        "statement_timeout_ms": "5000",
        "max_rows": "200",
        "connect_timeout": "5",
        "read_timeout": "30",
        "max_response_bytes": "1000000",
        **secret,
    }
    return ConnectorAdminForm(data=data)


def _model_config_form(org, **secret):
    data = {"organization": org.pk, "name": "main", "role": "general", "model": "m"}
    data.update(base_url="https://llm.example.com/v1", context_window="128000", timeout="60", **secret)
    return ModelConfigForm(data=data)


def _channel_form(org, **secret):
    data = {"organization": org.pk, "name": "approvals", "app_id": "cli_1", "receive_id_type": "chat_id"}
    return FeishuChannelForm(data={**data, "language": "zh-hans", **secret})


ADMIN_SECRET_INPUTS = [
    (_connector_form, "auth_secret_new", "{}"),
    (_connector_form, "dsn_new", "postgresql://reader:{}@db.example.com:5432/erp"),
    (_model_config_form, "api_key_input", "{}"),
    (_channel_form, "app_secret_input", "{}"),
    (_channel_form, "verification_token_input", "{}"),
    (_channel_form, "encrypt_key_input", "{}"),
]


@pytest.mark.parametrize(("make_form", "field", "shape"), ADMIN_SECRET_INPUTS)
def test_the_admin_refuses_a_secret_shorter_than_the_minimum(org, make_form, field, shape):
    refused = make_form(org, **{field: shape.format(SHORT)})
    assert not refused.is_valid()
    assert str(MIN_SECRET_LENGTH) in " ".join(refused.errors.get(field, []))
    accepted = make_form(org, **{field: shape.format(LONG_ENOUGH)})
    accepted.is_valid()
    assert field not in accepted.errors


def _base(org):
    return f"/api/v1/orgs/{org.slug}"


API_SECRET_INPUTS = [
    (
        "connectors/",
        {"name": "crm", "base_url": "https://crm.example.com/api", "auth_type": "bearer"},
        "auth_secret",
        "{}",
    ),
    (
        "connectors/",
        {"name": "db", "kind": "database", "base_url": ""},
        "dsn",
        "postgresql://r:{}@db.example.com/erp",
    ),
    (
        "model-configs/",
        {"name": "main", "base_url": "https://llm.example.com/v1", "model": "m"},
        "api_key",
        "{}",
    ),
    ("feishu-channels/", {"name": "approvals", "app_id": "cli_1"}, "app_secret", "{}"),
    ("feishu-channels/", {"name": "approvals", "app_id": "cli_1"}, "verification_token", "{}"),
    ("feishu-channels/", {"name": "approvals", "app_id": "cli_1"}, "encrypt_key", "{}"),
]


@pytest.mark.parametrize(("route", "body", "field", "shape"), API_SECRET_INPUTS)
def test_the_api_refuses_a_secret_shorter_than_the_minimum(
    client_for, org_admin, org, route, body, field, shape
):
    client = client_for(org_admin)
    refused = client.post(f"{_base(org)}/{route}", {**body, field: shape.format(SHORT)}, format="json")
    assert refused.status_code == 400 and field in refused.json(), refused.content
    assert str(MIN_SECRET_LENGTH) in str(refused.json()[field])


def test_the_api_refuses_a_short_secret_on_update_too(client_for, org_admin, org):
    connector = ConnectorFactory(
        organization=org, name="crm", auth_type="bearer", auth_secret=LONG_ENOUGH * 2
    )
    response = client_for(org_admin).patch(
        f"{_base(org)}/connectors/{connector.pk}/", {"auth_secret": SHORT}, format="json"
    )
    assert response.status_code == 400 and "auth_secret" in response.json()
    connector.refresh_from_db()
    assert connector.auth_secret == LONG_ENOUGH * 2


@pytest.mark.parametrize("secret", ["a", "e", "ab", SHORT])
def test_scrub_ignores_a_secret_too_short_to_redact_safely(secret):
    message = "a payment was created for the vendor"
    assert scrub(message, [secret]) == message
    assert scrub(f"token {LONG_ENOUGH}!", [LONG_ENOUGH]) == "token [redacted]!"
