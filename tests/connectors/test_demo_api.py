"""The demo ERP API under /demo-api/ (with its Idempotency-Key handling) and the demo seeder's "erp" connector."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import httpx
import pytest
from django.utils import timezone

from connectors.adapter_types import ConnectionWorks
from connectors.demo_api.models import DemoIdempotentRequest, DemoPayment, DemoPurchaseOrder
from connectors.demo_seed import demo_connector_seed
from connectors.models import Connector, ConnectorAction
from connectors.openapi import parse_openapi
from connectors.services import connector_test_connection
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


def _pay(client, order_id, key=None, **fields):
    body = {"order_id": order_id, "amount": "40", **fields}
    headers = {"Idempotency-Key": key} if key else {}
    return client.post("/demo-api/payments/", body, content_type="application/json", headers=headers)


def _approved_order(amount="100.00"):
    return DemoPurchaseOrder.objects.create(
        number=f"PO-{DemoPurchaseOrder.objects.count() + 900}",
        supplier="Acme",
        amount=amount,
        status="approved",
    )


def test_a_post_repeated_with_its_idempotency_key_gets_the_first_answer_and_pays_once(client):
    order = _approved_order()

    first = _pay(client, order.pk, key="run-1:pay-1")
    again = _pay(client, order.pk, key="run-1:pay-1")

    assert first.status_code == 201 and "Idempotent-Replayed" not in first.headers
    assert again.status_code == 201 and again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert DemoPayment.objects.filter(order=order).count() == 1
    other = _pay(client, order.pk, key="run-1:pay-2")
    unkeyed = [_pay(client, order.pk, amount="1"), _pay(client, order.pk, amount="1")]
    assert other.status_code == 201 and other.json()["id"] != first.json()["id"]
    assert [r.status_code for r in unkeyed] == [201, 201]  # without a key every POST counts
    assert DemoPayment.objects.filter(order=order).count() == 4


def test_the_key_of_one_request_is_refused_for_another_and_json_key_order_does_not_count(client):
    order = _approved_order()
    first = client.post(
        "/demo-api/payments/",
        f'{{"order_id": {order.pk}, "amount": "40"}}',
        content_type="application/json",
        headers={"Idempotency-Key": "k-1"},
    )
    reordered = client.post(
        "/demo-api/payments/",
        f'{{"amount": "40", "order_id": {order.pk}}}',
        content_type="application/json",
        headers={"Idempotency-Key": "k-1"},
    )
    other_amount = _pay(client, order.pk, key="k-1", amount="41")
    other_path = client.post(
        "/demo-api/purchase-orders/",
        {"order_id": order.pk, "amount": "40"},
        content_type="application/json",
        headers={"Idempotency-Key": "k-1"},
    )

    assert first.status_code == 201 and reordered.status_code == 201 and reordered.json() == first.json()
    for refused in (other_amount, other_path):
        assert refused.status_code == 422 and "different request" in refused.json()["error"]
    assert DemoPayment.objects.filter(order=order).count() == 1 and DemoPurchaseOrder.objects.count() == 1


def test_a_failed_request_is_not_remembered_so_its_key_works_once_the_problem_is_fixed(client):
    order = _create_order(client).json()

    early = _pay(client, order["id"], key="pay-after-approval")
    client.post(f"/demo-api/purchase-orders/{order['id']}/approve/", {}, content_type="application/json")
    paid = _pay(client, order["id"], key="pay-after-approval")

    assert early.status_code == 409 and paid.status_code == 201
    assert DemoPayment.objects.filter(order_id=order["id"]).count() == 1


def test_keys_are_forgotten_after_a_day_and_bad_keys_are_refused(client):
    order = _approved_order()
    first = _pay(client, order.pk, key="old-key")
    DemoIdempotentRequest.objects.update(created_at=timezone.now() - timedelta(hours=25))
    later = _pay(client, order.pk, key="old-key")
    too_long = _pay(client, order.pk, key="k" * 256)

    assert first.status_code == 201 and later.status_code == 201 and later.json()["id"] != first.json()["id"]
    assert too_long.status_code == 400 and "255" in too_long.json()["error"]
    assert DemoIdempotentRequest.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_with_one_key_pay_once(live_server):
    order = _approved_order()
    barrier = threading.Barrier(4)

    def pay(_: int) -> httpx.Response:
        barrier.wait(5)
        return httpx.post(
            f"{live_server.url}/demo-api/payments/",
            json={"order_id": order.pk, "amount": "40"},
            headers={"Idempotency-Key": "same-call"},
            timeout=20,
        )

    with ThreadPoolExecutor(4) as pool:
        responses = list(pool.map(pay, range(4)))

    assert [r.status_code for r in responses] == [201] * 4
    assert len({r.json()["id"] for r in responses}) == 1
    assert DemoPayment.objects.filter(order=order).count() == 1


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
    connector = Connector.objects.unscoped().get(organization=org, name="erp")
    assert connector.base_url == "http://127.0.0.1:8000/demo-api"
    assert connector.allowed_private_hosts == ["127.0.0.1"]
    names = set(
        ConnectorAction.objects.unscoped()
        .filter(connector=connector, is_active=True)
        .values_list("name", flat=True)
    )
    assert {"list_purchase_orders", "approve_purchase_order", "create_payment"} <= names and len(names) == 6


def test_seed_demo_creates_the_demo_org_connector(db):
    result = demo_seed(admin_password="a-strong-demo-password")
    assert Connector.objects.unscoped().filter(organization=result.organization, name="erp").exists()


def test_the_demo_erp_connectors_test_connection_works(org, settings, live_server):
    settings.DEMO_API_BASE_URL = f"{live_server.url}/demo-api"
    demo_connector_seed(org)
    connector = Connector.objects.unscoped().get(organization=org, name="erp")

    result = connector_test_connection(connector=connector)

    assert isinstance(result, ConnectionWorks), result
    assert result.detail.endswith("answered HTTP 200 OK")
