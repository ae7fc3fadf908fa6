"""Connector URLs and database DSNs are checked by the SSRF guard when saved (API and admin go through
``full_clean``), the OAuth2 token URL and every DSN host included; the connector's own allowed private
hosts are the only way past it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from connectors.models import Connector
from tests.connectors.admin_form import DEFAULT_LIMITS_AND_NO_ACTIONS
from tests.connectors.ssrf_corpus import PRIVATE_URL_HOSTS
from tests.factories import PASSWORD, ConnectorFactory

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
    assert not Connector.objects.unscoped().exists()


@pytest.mark.parametrize("host", PRIVATE_URL_HOSTS)
def test_an_oauth_token_url_on_a_private_address_is_refused_on_save(client_for, org_admin, org, host):
    response = client_for(org_admin).post(_connectors(org), _oauth(f"http://{host}/token"), format="json")

    assert response.status_code == 400, response.content
    assert "oauth_token_url" in response.json()
    assert not Connector.objects.unscoped().exists()


def test_the_connectors_allowed_private_hosts_let_its_token_url_through(client_for, org_admin, org, fake_dns):
    fake_dns["sso.internal.test"] = ["10.0.0.5"]
    body = _oauth("http://sso.internal.test/oauth/token")

    refused = client_for(org_admin).post(_connectors(org), body, format="json")
    allowed = client_for(org_admin).post(
        _connectors(org), {**body, "allowed_private_hosts": ["sso.internal.test"]}, format="json"
    )

    assert refused.status_code == 400 and "oauth_token_url" in refused.json()
    assert allowed.status_code == 201, allowed.content


# --- database DSNs: the same rule at save time as for URLs --------------------------------------------

DSN_PASSWORD = "pw-Secret-9f8e7d6c"  # noqa: S105  (a test value)


def _database(dsn: str, engine: str = "postgresql", **extra: object) -> dict[str, object]:
    return {"name": "ledger", "kind": "database", "engine": engine, "dsn": dsn, **extra}


# Spellings of non-public hosts as a DSN names them (libpq and the MySQL URL parser give the host
# as it is written; the guard resolves it like any other host).
PRIVATE_DSN_HOSTS = [h for h in PRIVATE_URL_HOSTS if "@" not in h and ":" not in h.strip("[]")] + [
    "[::1]",
    "[::ffff:127.0.0.1]",
    "[fd00:ec2::254]",
]


@pytest.mark.parametrize("host", PRIVATE_DSN_HOSTS)
def test_a_postgresql_dsn_url_on_a_private_host_is_refused_on_save(client_for, org_admin, org, host):
    dsn = f"postgresql://reader:{DSN_PASSWORD}@{host}:5432/erp"

    response = client_for(org_admin).post(_connectors(org), _database(dsn), format="json")

    assert response.status_code == 400, response.content
    assert "add its host to the allowed private hosts" in " ".join(response.json()["dsn"])
    assert DSN_PASSWORD not in response.content.decode() and "reader:" not in response.content.decode()
    assert not Connector.objects.unscoped().exists()


def test_a_postgresql_key_value_dsn_on_loopback_is_refused_with_its_host_named(client_for, org_admin, org):
    dsn = f"host=127.0.0.1 port=5432 dbname=erp user=reader password={DSN_PASSWORD}"

    response = client_for(org_admin).post(_connectors(org), _database(dsn), format="json")

    assert response.status_code == 400, response.content
    (message,) = response.json()["dsn"]
    assert message.startswith("127.0.0.1 is refused: it is a loopback address")
    assert DSN_PASSWORD not in message and "dbname" not in message
    assert not Connector.objects.unscoped().exists()


def test_every_host_of_a_multi_host_postgresql_dsn_is_checked(client_for, org_admin, org, fake_dns):
    fake_dns["db1.public.test"] = ["93.184.216.34"]
    fake_dns["db2.internal.test"] = ["10.0.0.5"]
    dsn = f"host=db1.public.test,db2.internal.test dbname=erp user=reader password={DSN_PASSWORD}"

    response = client_for(org_admin).post(_connectors(org), _database(dsn), format="json")

    assert response.status_code == 400, response.content
    assert "'db2.internal.test' (resolves to 10.0.0.5) is refused" in response.json()["dsn"][0]


@pytest.mark.parametrize("engine", ["mysql", "mariadb"])
def test_a_mysql_dsn_on_a_private_host_is_refused_on_save(client_for, org_admin, org, engine, fake_dns):
    fake_dns["shop-db.internal.test"] = ["192.168.10.20"]
    dsn = f"{engine}://shop_reader:{DSN_PASSWORD}@shop-db.internal.test:3306/shop"

    response = client_for(org_admin).post(_connectors(org), _database(dsn, engine=engine), format="json")

    assert response.status_code == 400, response.content
    (message,) = response.json()["dsn"]
    assert (
        "'shop-db.internal.test' (resolves to 192.168.10.20) is refused: it is a private address" in message
    )
    assert DSN_PASSWORD not in message and "shop_reader" not in message
    assert not Connector.objects.unscoped().exists()


@pytest.mark.parametrize(
    ("engine", "dsn"),
    [
        ("postgresql", f"postgresql://reader:{DSN_PASSWORD}@db.internal.test:5432/erp"),
        ("postgresql", f"host=db.internal.test dbname=erp user=reader password={DSN_PASSWORD}"),
        ("mysql", f"mysql://reader:{DSN_PASSWORD}@db.internal.test:3306/erp"),
    ],
)
def test_the_connectors_allowed_private_hosts_let_its_dsn_through(
    client_for, org_admin, org, fake_dns, engine, dsn
):
    fake_dns["db.internal.test"] = ["10.0.0.5"]
    body = _database(dsn, engine=engine)

    refused = client_for(org_admin).post(_connectors(org), body, format="json")
    allowed = client_for(org_admin).post(
        _connectors(org), {**body, "allowed_private_hosts": ["DB.internal.test"]}, format="json"
    )

    assert refused.status_code == 400 and "dsn" in refused.json()
    assert allowed.status_code == 201, allowed.content


def test_a_dsn_host_that_does_not_resolve_now_is_left_to_the_check_at_connect_time(
    client_for, org_admin, org, fake_dns
):
    dsn = f"postgresql://reader:{DSN_PASSWORD}@not-yet-in-dns.test/erp"

    response = client_for(org_admin).post(_connectors(org), _database(dsn), format="json")

    assert response.status_code == 201, response.content


def test_changing_only_the_dsn_of_a_saved_connector_to_a_private_host_is_refused(client_for, org_admin, org):
    connector = ConnectorFactory(
        organization=org, kind="database", base_url="", dsn="postgresql://reader:pw@93.184.216.34/erp"
    )

    response = client_for(org_admin).patch(
        f"{_connectors(org)}{connector.pk}/",
        {"dsn": f"postgresql://r:{DSN_PASSWORD}@10.1.2.3/erp"},
        format="json",
    )

    assert response.status_code == 400 and "dsn" in response.json(), response.content
    connector.refresh_from_db()
    assert connector.dsn == "postgresql://reader:pw@93.184.216.34/erp"


# --- the admin page: the error is on the DSN input -----------------------------------------------------


@pytest.fixture
def admin_client(client, org_admin):
    assert client.login(username=org_admin.username, password=PASSWORD)
    return client


def _admin_form(org, **overrides: str) -> dict[str, object]:
    data: dict[str, object] = {
        "organization": org.pk,
        "name": "ledger",
        "description": "",
        "kind": "database",
        "is_active": "on",
        "base_url": "",
        "idempotency_header": "Idempotency-Key",
        "auth_type": "none",
        "engine": "postgresql",
        "dsn_new": f"host=localhost port=5432 dbname=erp user=reader password={DSN_PASSWORD}",
        "schema_cache_seconds": "300",
        **DEFAULT_LIMITS_AND_NO_ACTIONS,
    }
    data.update(overrides)
    return data


def test_the_admin_refuses_a_loopback_dsn_on_the_dsn_input(admin_client, org):
    response = admin_client.post(reverse("admin:connectors_connector_add"), _admin_form(org))

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert list(errors) == ["dsn_new"]
    assert "'localhost' (resolves to" in errors["dsn_new"][0]
    assert "add its host to the allowed private hosts" in errors["dsn_new"][0]
    assert DSN_PASSWORD not in response.content.decode()
    assert not Connector.objects.unscoped().exists()


def test_the_admin_saves_a_loopback_dsn_whose_host_is_allowed(admin_client, org):
    response = admin_client.post(
        reverse("admin:connectors_connector_add"), _admin_form(org, allowed_private_hosts="localhost")
    )

    assert response.status_code == 302, response.context["adminform"].form.errors
    assert Connector.objects.unscoped().get(organization=org, name="ledger").allowed_private_hosts == [
        "localhost"
    ]
