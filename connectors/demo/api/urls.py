"""``/demo-api/``: the demo ERP API and its OpenAPI document."""

from __future__ import annotations

from django.urls import path

from connectors.demo.api import views

app_name = "demo_api"

urlpatterns = [
    path("", views.index, name="index"),
    path("openapi.json", views.openapi_document, name="openapi"),
    path("purchase-orders/", views.purchase_orders, name="purchase-orders"),
    path("purchase-orders/<int:order_id>/", views.purchase_order_detail, name="purchase-order"),
    path(
        "purchase-orders/<int:order_id>/approve/", views.purchase_order_approve, name="purchase-order-approve"
    ),
    path("payments/", views.payments, name="payments"),
]
