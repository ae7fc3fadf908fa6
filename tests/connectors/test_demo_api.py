"""The demo ERP API under /demo-api/ and the demo seeder's "erp" connector."""

from __future__ import annotations

import pytest

from connectors.demo_api.seed import demo_connector_seed
from connectors.models import Connector, ConnectorAction
from connectors.openapi import parse_openapi
from platform_core.demo import DEMO_SEEDERS, demo_seed

pytestmark = pytest.mark.django_db


def _create_order(client, **fields):
    body = {"supplier": "Acme Parts", "amount": "100.00", **fields}
    return client.post("/demo-api/purchase-orders/", body, content_type="application/json")


def test_purchase_order_lifecycle_create_approve_pay(client):
    created = _create_order(client, description="Bolts")
    assert created.status_code == 201
    order = created.json()
    assert order["number"].startswith("PO-") and order["status"] == "draft" and order["amount"] == "100.00"

    early = client.post(
        "/demo-api/payments/", {"order_id": order["id"], "amount": "10"}, content_type="application/json"
    )
    assert early.status_code == 409 and "not approved" in early.json()["error"]

    approved = client.post(
        f"/demo-api/purchase-orders/{order['id']}/approve/",
        {"approver": "li.wei"},
        content_type="application/json",
    )
    assert approved.status_code == 200 and approved.json()["status"] == "approved"
    again = client.post(
        f"/demo-api/purchase-orders/{order['id']}/approve/", {}, content_type="application/json"
    )
    assert again.status_code == 409

    over = client.post(
        "/demo-api/payments/", {"order_id": order["id"], "amount": "100.01"}, content_type="application/json"
    )
    assert over.status_code == 409
    paid = client.post(
        "/demo-api/payments/", {"order_id": order["id"], "amount": "100"}, content_type="application/json"
    )
    assert paid.status_code == 201

    detail = client.get(f"/demo-api/purchase-orders/{order['id']}/").json()
    assert detail["status"] == "paid" and detail["paid_amount"] == "100.00" and len(detail["payments"]) == 1
    assert [p["order_number"] for p in client.get(f"/demo-api/payments/?order_id={order['id']}").json()] == [
        order["number"]
    ]


def test_lists_filter_by_status_and_supplier(client):
    _create_order(client, supplier="Hangzhou Tea")
    _create_order(client, supplier="Nordic Office")
    assert [o["supplier"] for o in client.get("/demo-api/purchase-orders/?supplier=tea").json()] == [
        "Hangzhou Tea"
    ]
    assert client.get("/demo-api/purchase-orders/?status=paid").json() == []
    assert client.get("/demo-api/purchase-orders/?status=bogus").status_code == 400


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({"amount": "5"}, "supplier is required"),
        ({"supplier": "X"}, "amount is required"),
        ({"supplier": "X", "amount": "-1"}, "positive"),
        ({"supplier": "X", "amount": "lots"}, "decimal"),
        ({"supplier": "X", "amount": "1", "currency": "euro"}, "currency"),
    ],
)
def test_bad_input_gets_a_clear_400(client, body, error):
    response = client.post("/demo-api/purchase-orders/", body, content_type="application/json")
    assert response.status_code == 400 and error in response.json()["error"]


def test_malformed_json_and_unknown_orders_are_clear_errors(client):
    bad = client.post("/demo-api/purchase-orders/", "{nope", content_type="application/json")
    assert bad.status_code == 400 and bad.json() == {"error": "the body must be JSON"}
    assert client.get("/demo-api/purchase-orders/999/").status_code == 404


def test_the_openapi_document_is_served_with_an_absolute_server_url(client):
    response = client.get("/demo-api/openapi.json")
    assert response.status_code == 200
    parsed = parse_openapi(response.content.decode())
    assert parsed.server_url == "http://testserver/demo-api"
    assert len(parsed.actions) == 6


def test_the_demo_seeder_adds_the_erp_connector_with_its_actions(org, settings):
    settings.DEMO_API_BASE_URL = "http://127.0.0.1:8000/demo-api"
    assert demo_connector_seed in DEMO_SEEDERS
    demo_connector_seed(org)
    demo_connector_seed(org)  # idempotent
    connector = Connector.objects.get(organization=org, name="erp")
    assert connector.base_url == "http://127.0.0.1:8000/demo-api"
    assert connector.allowed_private_hosts == ["127.0.0.1"]
    names = set(
        ConnectorAction.objects.filter(connector=connector, is_active=True).values_list("name", flat=True)
    )
    assert {"list_purchase_orders", "approve_purchase_order", "create_payment"} <= names and len(names) == 6


def test_seed_demo_creates_the_demo_org_connector(db):
    result = demo_seed(admin_password="a-strong-demo-password")
    assert Connector.objects.filter(organization=result.organization, name="erp").exists()
