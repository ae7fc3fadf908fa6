"""What the demo MCP server's tools do, on the demo ERP's data (sync: database).

``find_purchase_orders`` reads; ``create_purchase_request`` writes a draft purchase order. Bad input
is a :class:`DemoToolError` with a short message, which the server returns as a tool error.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import Q

from connectors.demo.api.inputs import demo_amount, demo_order_status
from connectors.demo.api.models import DemoPurchaseOrder

MAX_ORDERS = 50


class DemoToolError(Exception):
    """The arguments were refused; the message says why."""


def purchase_orders_find(*, number: str = "", supplier: str = "", status: str = "") -> list[dict[str, Any]]:
    """Purchase orders by number, supplier (part of the name) and status; newest first."""
    orders = DemoPurchaseOrder.objects.order_by("-id")
    if number:
        orders = orders.filter(number__iexact=number.strip())
    if supplier:
        orders = orders.filter(Q(supplier__icontains=supplier.strip()))
    if status:
        orders = orders.filter(status=demo_order_status(status, error=DemoToolError))
    return [order.summary() for order in orders[:MAX_ORDERS]]


def _amount(value: Any) -> Decimal:
    return demo_amount(value, error=DemoToolError, example="1200.50")


@transaction.atomic
def purchase_request_create(*, supplier: Any, description: Any, amount: Any) -> dict[str, Any]:
    """A new draft purchase order (a purchase request) for ``supplier``."""
    supplier = str(supplier or "").strip()
    if not supplier or len(supplier) > 200:
        raise DemoToolError("supplier is required (at most 200 characters)")
    description = str(description or "").strip()[:500]
    order = DemoPurchaseOrder.objects.create(
        number="pending", supplier=supplier, description=description, amount=_amount(amount)
    )
    order.number = f"PO-{order.pk:04d}"
    order.save(update_fields=["number"])
    return order.summary()
