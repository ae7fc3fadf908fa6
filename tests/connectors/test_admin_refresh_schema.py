"""The "Refresh schema" button on a database connector's change page, and "Test connection" forgetting
the cached schema answers too."""

from __future__ import annotations

import time

import pytest
from django.urls import reverse

from connectors import db_schema
from connectors.adapter_types import CallOutcome
from connectors.models import ConnectorAction
from tests.factories import PASSWORD, ConnectorFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client, org_admin):
    assert client.login(username=org_admin.username, password=PASSWORD)
    return client


def _database(**fields: object):
    values = {
        "kind": "database",
        "base_url": "",
        "name": "ledger",
        "dsn": "postgresql://reader:pw-123456789@db.example.com/erp",
    }
    values.update(fields)
    return ConnectorFactory(**values)


def _cache_answer(connector) -> tuple[str, str, str, str, str]:
    key = (str(connector.pk), "settings", "list_tables", "", "")
    db_schema._cache[key] = db_schema._Entry(time.monotonic() + 600, CallOutcome(status="ok", content="old"))
    return key


def _url(name: str, pk: object) -> str:
    return reverse(f"admin:connectors_connector_{name}", args=[pk])


def test_the_refresh_schema_button_forgets_the_cached_answers_and_says_so(admin_client, org) -> None:
    connector = _database(organization=org)
    key = _cache_answer(connector)
    page = admin_client.get(_url("change", connector.pk)).content.decode()
    assert _url("refresh_schema", connector.pk) in page and "Refresh schema" in page

    response = admin_client.post(_url("refresh_schema", connector.pk), follow=True)

    assert response.redirect_chain[-1][0] == _url("change", connector.pk)
    assert "ledger: the tables and their descriptions will be read anew." in response.content.decode()
    assert key not in db_schema._cache
    assert ConnectorAction.objects.unscoped().filter(connector=connector, schema_tool="list_tables").exists()


def test_refresh_schema_needs_a_post_with_the_csrf_token(client, org_admin, org) -> None:
    connector = _database(organization=org)
    key = _cache_answer(connector)
    client.handler.enforce_csrf_checks = True
    assert client.login(username=org_admin.username, password=PASSWORD)

    assert client.get(_url("refresh_schema", connector.pk)).status_code == 405
    assert client.post(_url("refresh_schema", connector.pk)).status_code == 403
    assert key in db_schema._cache
    db_schema.schema_cache_clear(str(connector.pk))


def test_an_http_connector_has_no_refresh_schema_button(admin_client, org) -> None:
    connector = ConnectorFactory(organization=org, name="crm")

    page = admin_client.get(_url("change", connector.pk)).content.decode()

    assert "Refresh schema" not in page
    assert admin_client.post(_url("refresh_schema", connector.pk)).status_code == 404


def test_another_organisations_schema_cannot_be_refreshed(admin_client, org, other_org) -> None:
    foreign = _database(organization=other_org, name="globex")
    key = _cache_answer(foreign)

    assert admin_client.post(_url("refresh_schema", foreign.pk)).status_code == 404
    assert key in db_schema._cache
    db_schema.schema_cache_clear(str(foreign.pk))


def test_a_plain_member_cannot_refresh_the_schema(client, member, org) -> None:
    member.is_staff = True
    member.save()
    connector = _database(organization=org)
    key = _cache_answer(connector)
    assert client.login(username=member.username, password=PASSWORD)

    assert client.post(_url("refresh_schema", connector.pk)).status_code in (403, 404)
    assert key in db_schema._cache
    db_schema.schema_cache_clear(str(connector.pk))


def test_test_connection_forgets_the_cached_answers_even_when_it_fails(admin_client, org) -> None:
    connector = _database(organization=org, dsn="postgresql://reader:pw-123456789@127.0.0.1:1/erp")
    key = _cache_answer(connector)

    response = admin_client.post(_url("test_connection", connector.pk), follow=True)

    assert "ledger: connection failed" in response.content.decode()
    assert key not in db_schema._cache
